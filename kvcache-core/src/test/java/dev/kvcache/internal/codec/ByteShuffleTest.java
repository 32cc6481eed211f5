package dev.kvcache.internal.codec;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ByteShuffleTest {

  /** The definition: plane j holds byte j of every whole element; the tail follows unchanged. */
  private static byte[] reference(byte[] in, int width) {
    int elements = in.length / width;
    byte[] out = new byte[in.length];
    for (int j = 0; j < width; j++) {
      for (int i = 0; i < elements; i++) {
        out[j * elements + i] = in[i * width + j];
      }
    }
    System.arraycopy(in, elements * width, out, elements * width, in.length - elements * width);
    return out;
  }

  @Test
  void shuffleMatchesTheDefinitionAndUnshuffleInvertsIt() {
    SplittableRandom random = new SplittableRandom(5);
    for (int width : new int[] {2, 4}) {
      for (int length = 0; length < 300; length++) {
        byte[] in = new byte[length];
        for (int i = 0; i < length; i++) {
          in[i] = (byte) random.nextInt();
        }
        byte[] shuffled = new byte[length];
        ByteShuffle.shuffle(in, length, width, shuffled);
        assertThat(shuffled).as("width %d, length %d", width, length)
            .isEqualTo(reference(in, width));

        byte[] restored = new byte[length];
        ByteShuffle.unshuffle(shuffled, length, width, restored);
        assertThat(restored).isEqualTo(in);
      }
    }
  }
}
