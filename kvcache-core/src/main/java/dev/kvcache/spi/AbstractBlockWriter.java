package dev.kvcache.spi;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockWriter;
import dev.kvcache.PutStatus;
import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.zip.CRC32C;

/**
 * The bookkeeping every {@link BlockWriter} that reserved room shares: counting the bytes written,
 * refusing too many or too few, and the end states, committed or closed. All methods hold the
 * writer's lock, so a {@link #close()} from another thread waits for a write under way and never
 * frees memory that is still being written. A tier supplies where the bytes go ({@link #copyIn}),
 * how the block is published ({@link #publish}) and how its room is freed ({@link #discard}).
 */
public abstract class AbstractBlockWriter implements BlockWriter {

  /**
   * The bytes copied, then checksummed, at a time: inside a core's L2 cache, and as large as the
   * disk tier's gathered writes, so that a large part still reaches a file in large writes.
   */
  static final int CHECKSUM_SLICE_BYTES = 256 << 10;

  private final BlockKey key;
  private final int length;
  private final CRC32C crc;
  private int written;
  private boolean done;

  /**
   * A writer that computes the CRC32C of what is written.
   *
   * @throws IllegalArgumentException if {@code length} is not positive
   */
  protected AbstractBlockWriter(BlockKey key, int length) {
    this(key, length, true);
  }

  /**
   * @param checksummed whether this class computes the CRC32C of what is written, on each slice
   *     of {@value #CHECKSUM_SLICE_BYTES} bytes right after it is copied in (while the slice is in
   *     the CPU's caches); a subclass that passes
   *     false and has a checksum overrides {@link #crc32c()}
   * @throws IllegalArgumentException if {@code length} is not positive
   */
  protected AbstractBlockWriter(BlockKey key, int length, boolean checksummed) {
    this.crc = checksummed ? new CRC32C() : null;
    this.key = Objects.requireNonNull(key, "key");
    if (length <= 0) {
      throw new IllegalArgumentException("a block cannot be empty, got a length of " + length);
    }
    this.length = length;
  }

  @Override
  public final BlockKey key() {
    return key;
  }

  @Override
  public final int length() {
    return length;
  }

  @Override
  public final synchronized int remaining() {
    return length - written;
  }

  @Override
  public final Optional<PutStatus> rejection() {
    return Optional.empty();
  }

  @Override
  public final synchronized void write(ByteBuffer src) {
    Objects.requireNonNull(src, "src");
    ensureNotDone();
    int n = src.remaining();
    if (n > length - written) {
      throw new IllegalArgumentException("a part of " + n + " bytes does not fit: block " + key
          + " has " + (length - written) + " of its " + length + " bytes left to write");
    }
    if (crc == null) {
      copyIn(src, written);
      written += n;
      src.position(src.limit());
      return;
    }
    // a slice at a time, each checksummed right after it is copied, while it is in the CPU's
    // caches: a whole block of megabytes would be read from memory a second time
    int end = src.limit();
    for (int at = src.position(); at < end; at += CHECKSUM_SLICE_BYTES) {
      ByteBuffer slice = src.limit(Math.min(end, at + CHECKSUM_SLICE_BYTES)).position(at);
      copyIn(slice, written);
      written += slice.remaining();
      crc.update(slice); // to the slice's limit
    }
    src.limit(end).position(end);
  }

  @Override
  public synchronized OptionalInt crc32c() {
    return crc == null ? OptionalInt.empty() : OptionalInt.of((int) crc.getValue());
  }

  @Override
  public final synchronized PutStatus commit() {
    ensureNotDone();
    if (written != length) {
      throw new IllegalStateException("block " + key + " is incomplete: " + written + " of its "
          + length + " bytes were written");
    }
    done = true;
    return publish();
  }

  @Override
  public final synchronized void close() {
    if (!done) {
      done = true;
      discard();
    }
  }

  /**
   * A whole put through a writer: writes {@code src}'s remaining bytes, without moving its
   * position, and commits; for tiers whose {@code put} is their writer. Closes the writer.
   */
  public static PutStatus writeWhole(BlockWriter writer, ByteBuffer src) {
    try (writer) {
      if (writer.rejection().isPresent()) {
        return writer.rejection().get();
      }
      writer.write(src.duplicate());
      return writer.commit();
    }
  }

  private void ensureNotDone() {
    if (done) {
      throw new IllegalStateException("the writer of block " + key + " was committed or closed");
    }
  }

  /**
   * Copies {@code src}'s remaining bytes to {@code offset} in the block, leaving {@code src}'s
   * position alone; the bytes fit.
   */
  protected abstract void copyIn(ByteBuffer src, int offset);

  /**
   * Stores the complete block under its key. Called once; if it throws, it has freed the block's
   * room itself.
   */
  protected abstract PutStatus publish();

  /** Frees the room of a block that will not be committed. Called at most once. */
  protected abstract void discard();
}
