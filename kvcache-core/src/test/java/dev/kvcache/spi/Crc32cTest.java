package dev.kvcache.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class Crc32cTest {

  @Test
  void twoRunsCombinedAreTheCrcOfBothWhole() {
    SplittableRandom random = new SplittableRandom(7);
    byte[] bytes = new byte[3 << 20];
    random.nextBytes(bytes);
    int[] lengths = {0, 1, 7, 8, 4096, 12289, 1 << 20, (3 << 20)};
    for (int length : lengths) {
      int whole = Crc32c.of(ByteBuffer.wrap(bytes, 0, length));
      for (int at : new int[] {0, 1, length / 3, length / 2, length - 1, length}) {
        int cut = Math.max(0, Math.min(at, length));
        int first = Crc32c.of(ByteBuffer.wrap(bytes, 0, cut));
        int second = Crc32c.of(ByteBuffer.wrap(bytes, cut, length - cut));
        assertThat(Crc32c.combine(first, second, length - cut))
            .as("%d bytes cut at %d", length, cut).isEqualTo(whole);
      }
    }
  }

  @Test
  void partsCombinedInOrderAreTheBlocksCrc() {
    byte[] bytes = new byte[5_000_003];
    new SplittableRandom(11).nextBytes(bytes);
    int part = 1 << 20;
    int crc = 0;
    for (int at = 0; at < bytes.length; at += part) {
      int n = Math.min(part, bytes.length - at);
      crc = at == 0 ? Crc32c.of(ByteBuffer.wrap(bytes, 0, n))
          : Crc32c.combine(crc, Crc32c.of(ByteBuffer.wrap(bytes, at, n)), n);
    }
    assertThat(crc).isEqualTo(Crc32c.of(ByteBuffer.wrap(bytes)));
    assertThat(Crc32c.combine(crc, Crc32c.of(ByteBuffer.wrap(new byte[0])), 0)).isEqualTo(crc);
  }

  @Test
  void aNegativeLengthIsRefused() {
    assertThatThrownBy(() -> Crc32c.combine(1, 2, -1)).hasMessageContaining("-1 bytes");
  }
}
