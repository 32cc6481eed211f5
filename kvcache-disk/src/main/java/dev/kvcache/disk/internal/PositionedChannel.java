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
  private final CRC32C crc;
  private long position;
  private long written;

  public PositionedChannel(SuperBlock sb, long position) {
    this(sb, position, true);
  }

  /**
   * @param checksummed whether to compute the CRC32C of what is written ({@link #crc()}); a
   *     writer that has it already passes false
   */
  public PositionedChannel(SuperBlock sb, long position, boolean checksummed) {
    this.sb = sb;
    this.position = position;
    this.crc = checksummed ? new CRC32C() : null;
  }

  @Override
  public int write(ByteBuffer src) throws IOException {
    int n = src.remaining();
    if (crc != null) {
      crc.update(src.duplicate());
    }
    sb.write(src, position);
    position += n;
    written += n;
    return n;
  }

  public long written() {
    return written;
  }

  public int crc() {
    if (crc == null) {
      throw new IllegalStateException("this channel computes no checksum");
    }
    return (int) crc.getValue();
  }

  @Override
  public boolean isOpen() {
    return true;
  }

  @Override
  public void close() {}
}
