package dev.kvcache.internal.codec;

/**
 * The bit-shuffle filter (as in the bitshuffle library, with a layout of its own): a chunk is
 * byte-shuffled into {@code w} planes of {@code e = n / w} bytes ({@link ByteShuffle}), then each
 * plane is split into its eight bit planes ({@link BitTranspose}); the trailing {@code n - w e}
 * bytes that do not fill an element stay unchanged at the end.
 *
 * <pre>
 *   chunk (n bytes) = plane 0 | plane 1 | ... | plane w-1 | tail
 *   plane (e bytes) = bits 0 of its bytes | bits 1 | ... | bits 7 | e mod 8 bytes unchanged
 * </pre>
 *
 * Both directions work in place on {@code data}, using {@code scratch} (at least as long) for the
 * intermediate step.
 */
public final class BitShuffle {

  private BitShuffle() {}

  /** Bit-shuffles the first {@code length} bytes of {@code data} in place. */
  public static void shuffle(byte[] data, int length, int width, byte[] scratch) {
    ByteShuffle.shuffle(data, length, width, scratch);
    int plane = length / width;
    for (int j = 0; j < width; j++) {
      BitTranspose.transpose(scratch, j * plane, plane, data, j * plane);
    }
    int tail = plane * width;
    System.arraycopy(scratch, tail, data, tail, length - tail);
  }

  /** Reverses {@link #shuffle}, in place. */
  public static void unshuffle(byte[] data, int length, int width, byte[] scratch) {
    int plane = length / width;
    for (int j = 0; j < width; j++) {
      BitTranspose.untranspose(data, j * plane, plane, scratch, j * plane);
    }
    int tail = plane * width;
    System.arraycopy(data, tail, scratch, tail, length - tail);
    ByteShuffle.unshuffle(scratch, length, width, data);
  }
}
