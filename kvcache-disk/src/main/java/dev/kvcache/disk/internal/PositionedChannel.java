package dev.kvcache.disk.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;
import java.util.zip.CRC32C;

/**
 * Writes to a super-block from a starting position onwards, keeping the CRC32C and the count of
 * what went through: the codec streams an encoded block into its record with it.
 */
public final class PositionedChannel implements WritableByteChannel {

  private final SuperBlock sb;
  private final CRC32C crc = new CRC32C();
  private long position;
  private long written;

  public PositionedChannel(SuperBlock sb, long position) {
    this.sb = sb;
    this.position = position;
  }

  @Override
  public int write(ByteBuffer src) throws IOException {
    int n = src.remaining();
    crc.update(src.duplicate());
    sb.write(src, position);
    position += n;
    written += n;
    return n;
  }

  public long written() {
    return written;
  }

  public int crc() {
    return (int) crc.getValue();
  }

  @Override
  public boolean isOpen() {
    return true;
  }

  @Override
  public void close() {}
}
