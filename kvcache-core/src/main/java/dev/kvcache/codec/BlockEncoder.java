package dev.kvcache.codec;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;
import java.util.Objects;
import java.util.zip.CRC32C;

/**
 * Encodes one block whose bytes arrive in parts, such as a network body, into a container written
 * to a channel chunk by chunk, as soon as each chunk is complete. Memory is one raw and one
 * encoded chunk whatever the block's length; a part that holds a whole chunk is encoded from where
 * it is, without being gathered first. The container is the same as {@link BlockCodec#encode}
 * writes for the same bytes.
 *
 * <p>Opened by {@link BlockCodec#encoder}, which writes the container's header at once. Parts
 * come from one thread at a time (a hand-off between threads must establish happens-before). An
 * encoder must be closed, normally by {@link #finish()}; closing it early leaves an incomplete
 * container in the channel.
 *
 * <pre>{@code
 * try (BlockEncoder encoder = codec.encoder(length, channel)) {
 *   while (moreParts()) {
 *     encoder.write(nextPart());
 *   }
 *   long containerBytes = encoder.finish();
 * }
 * }</pre>
 */
public final class BlockEncoder implements AutoCloseable {

  private final BlockCodec codec;
  private final WritableByteChannel out;
  private final long rawLength;
  private final CRC32C crc = new CRC32C();
  private CodecBuffers.ChunkBuffers buffers;
  private long taken;
  private long written;

  BlockEncoder(BlockCodec codec, long rawLength, WritableByteChannel out) throws IOException {
    this.codec = codec;
    this.out = out;
    this.rawLength = rawLength;
    ByteBuffer header = ByteBuffer.allocate(BlockCodec.CONTAINER_HEADER_BYTES);
    codec.writeHeader(header, 0, rawLength);
    written = ContainerStreams.writeFully(out, header);
    buffers = CodecBuffers.takeChunkBuffers(codec.chunkSizeBytes());
  }

  /** Raw bytes still to come before {@link #finish()}. */
  public long remaining() {
    return rawLength - taken;
  }

  /** Container bytes written to the channel so far, header included. */
  public long written() {
    return written;
  }

  /**
   * Takes all of {@code part}'s remaining bytes, advancing its position to its limit, and writes
   * every chunk they complete.
   *
   * @throws IllegalArgumentException if {@code part} holds more than {@link #remaining()} bytes;
   *     nothing is taken
   * @throws IllegalStateException if the encoder was finished or closed
   * @throws IOException if the channel fails; the container is then incomplete
   */
  public void write(ByteBuffer part) throws IOException {
    Objects.requireNonNull(part, "part");
    requireOpen();
    if (part.remaining() > rawLength - taken) {
      throw new IllegalArgumentException("a part of " + part.remaining() + " bytes does not fit: "
          + (rawLength - taken) + " of the block's " + rawLength + " bytes are left");
    }
    ByteBuffer pending = buffers.raw;
    while (part.hasRemaining()) {
      int chunk = (int) Math.min(codec.chunkSizeBytes(), rawLength - (taken - pending.position()));
      if (pending.position() == 0 && part.remaining() >= chunk) {
        emit(part, part.position(), chunk);
        part.position(part.position() + chunk);
        taken += chunk;
        continue;
      }
      int n = Math.min(chunk - pending.position(), part.remaining());
      pending.put(pending.position(), part, part.position(), n);
      pending.position(pending.position() + n);
      part.position(part.position() + n);
      taken += n;
      if (pending.position() == chunk) {
        emit(pending, 0, chunk);
        pending.clear();
      }
    }
  }

  private void emit(ByteBuffer src, int at, int length) throws IOException {
    ByteBuffer encoded = buffers.encoded.clear();
    int size = codec.chunks().encode(src, at, length, encoded, 0, crc);
    written += ContainerStreams.writeFully(out, encoded.limit(size));
  }

  /**
   * Completes the container and closes the encoder.
   *
   * @return the container's length in bytes
   * @throws IllegalStateException if raw bytes are still missing ({@link #remaining()} is not 0),
   *     or the encoder was finished or closed
   */
  public long finish() {
    requireOpen();
    if (taken != rawLength) {
      throw new IllegalStateException("the block is incomplete: " + taken + " of its " + rawLength
          + " bytes were written");
    }
    close();
    return written;
  }

  /** Gives back the chunk buffers; the container is incomplete unless {@link #finish()} ran. */
  @Override
  public void close() {
    if (buffers != null) {
      CodecBuffers.giveBack(buffers);
      buffers = null;
    }
  }

  private void requireOpen() {
    if (buffers == null) {
      throw new IllegalStateException("the encoder was finished or closed");
    }
  }
}
