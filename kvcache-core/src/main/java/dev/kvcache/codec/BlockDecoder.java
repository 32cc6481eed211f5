package dev.kvcache.codec;

import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_HEADER_BYTES;
import static dev.kvcache.internal.codec.ContainerLayout.HEADER_BYTES;

import dev.kvcache.codec.CorruptBlockException.Reason;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * Decodes a container whose bytes arrive in parts, such as a network body, handing each chunk to a
 * {@link Sink} as soon as it is complete and has passed its checksum. Memory is one encoded and one
 * decoded chunk whatever the block's length; nothing is decoded from a chunk that fails its checks.
 * The sink learns the block's decoded length from the container's header before the first chunk,
 * and can refuse it there, before any chunk buffer is taken.
 *
 * <p>Opened by {@link BlockCodec#decoder}. Parts come from one thread at a time (a hand-off
 * between threads must establish happens-before). A decoder must be closed; {@link #finish()}
 * checks that the container was whole and closes it.
 *
 * <pre>{@code
 * try (BlockDecoder decoder = BlockCodec.decoder(sink)) {
 *   while (moreParts()) {
 *     decoder.write(nextPart());
 *   }
 *   decoder.finish();
 * }
 * }</pre>
 */
public final class BlockDecoder implements AutoCloseable {

  /** Where a {@link BlockDecoder} puts what it decodes. */
  public interface Sink {
    /**
     * The block's decoded length, from the container's header, before any chunk. May throw to
     * refuse the block: the exception leaves {@link BlockDecoder#write} as it is.
     */
    void start(long decodedLength) throws IOException;

    /**
     * The next decoded chunk, between its position and its limit, checked against its checksum.
     * The buffer is the decoder's and is reused: its bytes are valid until this call returns.
     */
    void accept(ByteBuffer chunk) throws IOException;
  }

  private final Sink sink;
  private final ByteBuffer headerBytes = ByteBuffer.allocate(HEADER_BYTES);
  private ContainerHeader header;
  private CodecBuffers.ChunkBuffers buffers;
  private int index;
  private long offset = HEADER_BYTES;
  private int stored = -1;
  private boolean closed;

  BlockDecoder(Sink sink) {
    this.sink = Objects.requireNonNull(sink, "sink");
  }

  /** The block's decoded length once the container's header has arrived; -1 before. */
  public long decodedLength() {
    return header == null ? -1 : header.rawLength();
  }

  /** Whether the container's last chunk has been decoded. */
  public boolean isComplete() {
    return header != null && index == header.chunkCount();
  }

  /**
   * Takes all of {@code part}'s remaining bytes, advancing its position to its limit, and hands
   * every chunk they complete to the sink.
   *
   * @throws CorruptBlockException if the container is malformed or fails a checksum, or bytes
   *     follow its last chunk; the decoder takes nothing more
   * @throws IOException what the sink threw
   * @throws IllegalStateException if the decoder was finished or closed
   */
  public void write(ByteBuffer part) throws IOException {
    Objects.requireNonNull(part, "part");
    if (closed) {
      throw new IllegalStateException("the decoder was finished or closed");
    }
    try {
      while (part.hasRemaining()) {
        if (header == null) {
          take(part, headerBytes);
          if (!headerBytes.hasRemaining()) {
            ContainerHeader h = ContainerHeader.read(headerBytes.flip(), 0);
            sink.start(h.rawLength());
            header = h;
          }
          continue;
        }
        if (index == header.chunkCount()) {
          throw new CorruptBlockException(Reason.LENGTH_OUT_OF_BOUNDS, -1, offset,
              part.remaining() + " more bytes follow the container's last chunk");
        }
        if (buffers == null) {
          buffers = CodecBuffers.takeChunkBuffers(header.largestChunk());
          buffers.encoded.clear().limit(CHUNK_HEADER_BYTES);
        }
        ByteBuffer chunk = buffers.encoded;
        take(part, chunk);
        if (chunk.hasRemaining()) {
          continue; // part is used up
        }
        ChunkDecoder decoder = new ChunkDecoder(header);
        if (stored < 0) {
          stored = decoder.readChunkHeader(chunk, 0, index, offset);
          chunk.limit(CHUNK_HEADER_BYTES + stored);
          if (stored > 0) {
            continue;
          }
        }
        decoder.readChunkHeader(chunk, 0, index, offset);
        ByteBuffer decoded = buffers.raw.clear();
        decoded.limit(decoder.decodeChunk(chunk, 0, decoded, 0, index, offset));
        sink.accept(decoded);
        offset += CHUNK_HEADER_BYTES + stored;
        index++;
        stored = -1;
        chunk.clear().limit(CHUNK_HEADER_BYTES);
      }
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
  }

  /** Copies as much of {@code src} as fits into {@code dst}'s remaining room. */
  private static void take(ByteBuffer src, ByteBuffer dst) {
    int n = Math.min(src.remaining(), dst.remaining());
    dst.put(dst.position(), src, src.position(), n);
    dst.position(dst.position() + n);
    src.position(src.position() + n);
  }

  /**
   * Checks that the whole container arrived, and closes the decoder.
   *
   * @return the block's decoded length
   * @throws CorruptBlockException ({@link Reason#TRUNCATED}) if the container is not complete
   * @throws IllegalStateException if the decoder was finished or closed
   */
  public long finish() throws CorruptBlockException {
    if (closed) {
      throw new IllegalStateException("the decoder was finished or closed");
    }
    close();
    if (header == null) {
      throw new CorruptBlockException(Reason.TRUNCATED, -1, 0, "a container starts with a "
          + HEADER_BYTES + "-byte header, only " + headerBytes.position() + " bytes arrived");
    }
    if (index < header.chunkCount()) {
      throw new CorruptBlockException(Reason.TRUNCATED, index, offset, "the container ended in "
          + "chunk " + index + " of " + header.chunkCount());
    }
    return header.rawLength();
  }

  /** Gives back the chunk buffers; closing twice does nothing. */
  @Override
  public void close() {
    closed = true;
    if (buffers != null) {
      CodecBuffers.giveBack(buffers);
      buffers = null;
    }
  }
}
