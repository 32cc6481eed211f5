package dev.kvcache.bench;

import java.nio.ByteBuffer;
import java.util.SplittableRandom;

/** Buffers and sizes shared by the benchmarks. */
final class Blocks {

  private Blocks() {}

  /** A direct buffer of {@code size} pseudo-random bytes, position 0, limit size. */
  static ByteBuffer randomDirect(int size, long seed) {
    ByteBuffer b = ByteBuffer.allocateDirect(size);
    SplittableRandom random = new SplittableRandom(seed);
    while (b.remaining() >= 8) {
      b.putLong(random.nextLong());
    }
    while (b.hasRemaining()) {
      b.put((byte) random.nextInt());
    }
    return b.flip();
  }

  /** How many blocks make up the working set: at least 8, so reads are not served from L3. */
  static int blocksIn(long workingSetBytes, int blockSizeBytes) {
    return (int) Math.max(8, workingSetBytes / blockSizeBytes);
  }
}
