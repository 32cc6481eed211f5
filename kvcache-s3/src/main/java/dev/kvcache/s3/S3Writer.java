package dev.kvcache.s3;

import dev.kvcache.BlockKey;
import dev.kvcache.PutStatus;
import dev.kvcache.spi.AbstractBlockWriter;
import java.nio.ByteBuffer;

/**
 * A block written in parts: gathered in a direct buffer of its length, checksummed as it is
 * written, and uploaded from that buffer by its commit.
 */
final class S3Writer extends AbstractBlockWriter {

  private final S3Tier tier;
  private ByteBuffer block;

  S3Writer(S3Tier tier, BlockKey key, int length) {
    super(key, length);
    this.tier = tier;
    this.block = ByteBuffer.allocateDirect(length);
  }

  @Override
  protected void copyIn(ByteBuffer src, int offset) {
    block.put(offset, src, src.position(), src.remaining());
  }

  @Override
  public boolean writesMayWait() {
    return false; // a copy into memory; the upload is the commit's
  }

  @Override
  protected PutStatus publish() {
    ByteBuffer whole = block;
    block = null;
    return tier.upload(key(), whole, crc32c().getAsInt());
  }

  @Override
  protected void discard() {
    block = null;
  }
}
