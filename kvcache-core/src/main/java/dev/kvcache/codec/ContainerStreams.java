package dev.kvcache.codec;

import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_HEADER_BYTES;
import static dev.kvcache.internal.codec.ContainerLayout.HEADER_BYTES;

import dev.kvcache.codec.CorruptBlockException.Reason;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channel;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SelectableChannel;
import java.nio.channels.WritableByteChannel;
import java.util.function.Consumer;

/** Containers read from and written to blocking channels, a chunk at a time. */
final class ContainerStreams {

  private ContainerStreams() {}

  /** What is done with each chunk {@link #readChunks} has read and checked the header of. */
  interface ChunkSink {
    /**
     * @param chunk the chunk, header included, at position 0
     * @param spare a buffer at least one decoded chunk long, free for the sink's use
     */
    void accept(ChunkDecoder decoder, ByteBuffer chunk, ByteBuffer spare, int index, long offset)
        throws IOException;
  }

  /**
   * Reads a container from {@code in} (a blocking channel) one chunk at a time, exactly its bytes,
   * holding one encoded chunk in memory: hands the header to {@code onHeader}, then each chunk to
   * {@code sink}.
   */
  static void readChunks(ReadableByteChannel in, Consumer<ContainerHeader> onHeader, ChunkSink sink)
      throws IOException {
    requireBlocking(in);
    ByteBuffer headerBytes = ByteBuffer.allocate(HEADER_BYTES);
    readFully(in, headerBytes, -1, 0);
    ContainerHeader header = ContainerHeader.read(headerBytes.flip(), 0);
    onHeader.accept(header);
    ChunkDecoder decoder = new ChunkDecoder(header);
    CodecBuffers.ChunkBuffers buffers = CodecBuffers.takeChunkBuffers(header.largestChunk());
    long offset = HEADER_BYTES;
    try {
      ByteBuffer chunk = buffers.encoded;
      for (int i = 0; i < header.chunkCount(); i++) {
        chunk.clear().limit(CHUNK_HEADER_BYTES);
        readFully(in, chunk, i, offset);
        int stored = decoder.readChunkHeader(chunk, 0, i, offset);
        chunk.limit(CHUNK_HEADER_BYTES + stored);
        readFully(in, chunk, i, offset);
        sink.accept(decoder, chunk, buffers.raw, i, offset);
        offset += CHUNK_HEADER_BYTES + stored;
      }
    } finally {
      CodecBuffers.giveBack(buffers);
    }
  }

  /**
   * Reads the next chunk, after {@code done} of {@code rawLength} bytes, into {@code chunk}: at
   * most {@code chunkSize} bytes.
   *
   * @throws EOFException if {@code in} ends first
   */
  static int readChunk(ReadableByteChannel in, ByteBuffer chunk, int chunkSize, long done,
      long rawLength) throws IOException {
    int len = (int) Math.min(chunkSize, rawLength - done);
    chunk.clear().limit(len);
    while (chunk.hasRemaining()) {
      if (in.read(chunk) < 0) {
        throw new EOFException(
            "the stream ended after " + (done + chunk.position()) + " of " + rawLength + " bytes");
      }
    }
    return len;
  }

  private static void readFully(ReadableByteChannel in, ByteBuffer b, int chunk, long offset)
      throws IOException {
    while (b.hasRemaining()) {
      if (in.read(b) < 0) {
        throw new CorruptBlockException(Reason.TRUNCATED, chunk, offset,
            "the stream ended " + b.remaining() + " bytes early");
      }
    }
  }

  static long writeFully(WritableByteChannel out, ByteBuffer b) throws IOException {
    long n = 0;
    while (b.hasRemaining()) {
      n += out.write(b);
    }
    return n;
  }

  static void requireBlocking(Channel channel) {
    if (channel instanceof SelectableChannel && !((SelectableChannel) channel).isBlocking()) {
      throw new IllegalArgumentException("the channel must be in blocking mode");
    }
  }
}
