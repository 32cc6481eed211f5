package dev.kvcache.spi;

import dev.kvcache.BlockKey;
import dev.kvcache.KvCache;
import dev.kvcache.PutStatus;
import java.nio.ByteBuffer;

/**
 * The writer of a cache that cannot write a block in place: it gathers the parts in a heap buffer
 * of the whole block and puts that on commit.
 */
final class StagedWriter extends AbstractBlockWriter {

  private final KvCache cache;
  private ByteBuffer staged;

  StagedWriter(KvCache cache, BlockKey key, int length) {
    super(key, length, false); // the put on commit computes the checksum
    this.cache = cache;
    this.staged = ByteBuffer.allocate(length);
  }

  @Override
  protected void copyIn(ByteBuffer src, int offset) {
    staged.put(offset, src, src.position(), src.remaining());
  }

  @Override
  public boolean writesMayWait() {
    return false; // a copy into memory
  }

  @Override
  protected PutStatus publish() {
    ByteBuffer block = staged;
    staged = null;
    return cache.put(key(), block);
  }

  @Override
  protected void discard() {
    staged = null;
  }
}
