package dev.kvcache.s3api.body;

import java.nio.ByteBuffer;
import java.util.zip.Checksum;

/**
 * CRC-64/NVME, the CRC64 of S3's {@code x-amz-checksum-crc64nvme}: reflected, polynomial {@code
 * 0xad93d23594c93659} ({@code 0x9a6c9329ac4bc9b5} reflected), initial value and final XOR all ones;
 * the check value of {@code "123456789"} is {@code 0xae8b14860a799888}. Eight bytes a step
 * through eight tables.
 */
final class Crc64Nvme implements Checksum {

  private static final long POLY = 0x9a6c9329ac4bc9b5L;
  private static final long[][] TABLES = new long[8][256];

  static {
    for (int i = 0; i < 256; i++) {
      long c = i;
      for (int k = 0; k < 8; k++) {
        c = (c & 1) != 0 ? c >>> 1 ^ POLY : c >>> 1;
      }
      TABLES[0][i] = c;
    }
    for (int t = 1; t < 8; t++) {
      for (int i = 0; i < 256; i++) {
        long c = TABLES[t - 1][i];
        TABLES[t][i] = c >>> 8 ^ TABLES[0][(int) (c & 0xff)];
      }
    }
  }

  private long crc = ~0L;

  @Override
  public void update(int b) {
    crc = crc >>> 8 ^ TABLES[0][(int) ((crc ^ b) & 0xff)];
  }

  @Override
  public void update(byte[] b, int off, int len) {
    update(ByteBuffer.wrap(b, off, len));
  }

  @Override
  public void update(ByteBuffer buffer) {
    ByteBuffer b = buffer.slice().order(java.nio.ByteOrder.LITTLE_ENDIAN);
    long c = crc;
    int i = 0;
    int n = b.remaining();
    for (; i + 8 <= n; i += 8) {
      long x = c ^ b.getLong(i);
      c = TABLES[7][(int) (x & 0xff)] ^ TABLES[6][(int) (x >>> 8 & 0xff)]
          ^ TABLES[5][(int) (x >>> 16 & 0xff)] ^ TABLES[4][(int) (x >>> 24 & 0xff)]
          ^ TABLES[3][(int) (x >>> 32 & 0xff)] ^ TABLES[2][(int) (x >>> 40 & 0xff)]
          ^ TABLES[1][(int) (x >>> 48 & 0xff)] ^ TABLES[0][(int) (x >>> 56)];
    }
    for (; i < n; i++) {
      c = c >>> 8 ^ TABLES[0][(int) ((c ^ b.get(i)) & 0xff)];
    }
    crc = c;
    buffer.position(buffer.limit());
  }

  @Override
  public long getValue() {
    return ~crc;
  }

  @Override
  public void reset() {
    crc = ~0L;
  }
}
