package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.SharedMemorySlice;
import dev.kvcache.spi.PinnedLease;
import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.OptionalInt;

/** A lease of the tiered cache: a view of the bytes in whichever tier holds them, no copy. */
final class TieredLease extends PinnedLease {

  private final ByteBuffer bytes;
  private final OptionalInt crc32c;
  private final Optional<SharedMemorySlice> sharedMemory;
  private final Runnable onClose;

  TieredLease(BlockKey key, ByteBuffer bytes, OptionalInt crc32c, Runnable onClose) {
    this(key, bytes, crc32c, Optional.empty(), onClose);
  }

  private TieredLease(BlockKey key, ByteBuffer bytes, OptionalInt crc32c,
      Optional<SharedMemorySlice> sharedMemory, Runnable onClose) {
    super(key);
    this.bytes = bytes;
    this.crc32c = crc32c;
    this.sharedMemory = sharedMemory;
    this.onClose = onClose;
  }

  /** A lease over another tier's lease, closing it when closed. */
  static TieredLease over(BlockLease inner, Runnable onClose) {
    return new TieredLease(inner.key(), inner.bytes(), inner.crc32c(), inner.sharedMemory(), () -> {
      inner.close();
      onClose.run();
    });
  }

  @Override
  public OptionalInt crc32c() {
    return crc32c;
  }

  @Override
  public Optional<SharedMemorySlice> sharedMemory() {
    return sharedMemory;
  }

  @Override
  protected ByteBuffer view() {
    return bytes.duplicate();
  }

  @Override
  public int length() {
    return bytes.remaining();
  }

  @Override
  protected void release() {
    onClose.run();
  }
}
