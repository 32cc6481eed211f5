package dev.kvcache.internal.codec;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class BitShuffleTest {

  /**
   * The definition, bit by bit: byte j of element i goes to plane j; within a plane of e bytes,
   * bit k of byte i goes to bit (i mod 8) of byte (k * (e div 8) + i div 8); bytes past the last
   * whole group of eight in a plane, and past the last whole element, stay where they are.
   */
  private static byte[] reference(byte[] in, int width) {
    int e = in.length / width;
    int g = e / 8;
    byte[] out = in.clone();
    for (int j = 0; j < width; j++) {
      int plane = j * e;
      for (int i = 0; i < e; i++) {
        int b = in[i * width + j] & 0xff;
        if (i >= 8 * g) {
          out[plane + i] = (byte) b;
          continue;
        }
        for (int k = 0; k < 8; k++) {
          int at = plane + k * g + i / 8;
          int bit = (b >>> k) & 1;
          out[at] = (byte) ((out[at] & ~(1 << (i % 8))) | (bit << (i % 8)));
        }
      }
    }
    return out;
  }

  @Test
  void shuffleMatchesTheDefinitionAndUnshuffleInvertsIt() {
    SplittableRandom random = new SplittableRandom(11);
    for (int width : new int[] {1, 2, 4}) {
      for (int length = 0; length < 1200; length += length < 200 ? 1 : 37) {
        byte[] in = new byte[length];
        for (int i = 0; i < length; i++) {
          in[i] = (byte) random.nextInt();
        }
        byte[] data = in.clone();
        byte[] scratch = new byte[length];
        BitShuffle.shuffle(data, length, width, scratch);
        assertThat(data).as("width %d, length %d", width, length).isEqualTo(reference(in, width));

        BitShuffle.unshuffle(data, length, width, scratch);
        assertThat(data).as("width %d, length %d", width, length).isEqualTo(in);
      }
    }
  }

  @Test
  void onlyTheGivenLengthIsTouched() {
    byte[] data = new byte[100];
    byte[] scratch = new byte[100];
    java.util.Arrays.fill(data, (byte) 0x5a);
    BitShuffle.shuffle(data, 64, 2, scratch);
    for (int i = 64; i < 100; i++) {
      assertThat(data[i]).isEqualTo((byte) 0x5a);
    }
  }

  @Test
  void bitsOfEqualSignificanceEndUpTogether() {
    // 64 bf16-like elements whose high byte is always 0x3f: after the shuffle the high plane is
    // eight bytes of all-ones or all-zeros, one per bit of 0x3f
    byte[] data = new byte[128];
    for (int i = 0; i < 64; i++) {
      data[2 * i] = (byte) (i * 37);
      data[2 * i + 1] = 0x3f;
    }
    BitShuffle.shuffle(data, 128, 2, new byte[128]);
    for (int k = 0; k < 8; k++) {
      assertThat(data[64 + 8 * k]).isEqualTo((byte) (((0x3f >>> k) & 1) == 1 ? 0xff : 0));
    }
  }
}
