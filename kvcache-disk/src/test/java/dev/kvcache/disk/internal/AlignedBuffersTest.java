package dev.kvcache.disk.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/**
 * The pool of buffers for direct reads: page-aligned, at least the length asked rounded up to a
 * power of two from a page, reused once given back, and never holding more than its bound.
 */
class AlignedBuffersTest {

  @Test
  void buffersArePageAlignedAndLongEnough() {
    AlignedBuffers pool = new AlignedBuffers(1 << 20);
    for (int length : new int[] {1, 4095, 4096, 4097, 65_536, (1 << 20) + 1}) {
      ByteBuffer b = pool.take(length);
      assertThat(b.isDirect()).isTrue();
      assertThat(b.alignmentOffset(0, 4096)).as("alignment of %d", length).isZero();
      assertThat(b.capacity()).isGreaterThanOrEqualTo(length).isGreaterThanOrEqualTo(4096);
      assertThat(Integer.bitCount(b.capacity())).isEqualTo(1);
      assertThat(b.position()).isZero();
      assertThat(b.limit()).isEqualTo(b.capacity());
    }
  }

  @Test
  void aBufferGivenBackIsTakenAgainClearedAndTheBoundHolds() {
    AlignedBuffers pool = new AlignedBuffers(64 << 10);
    ByteBuffer first = pool.take(40_000); // 64 KiB
    first.position(100).limit(200);
    pool.give(first);
    ByteBuffer again = pool.take(50_000);
    assertThat(again).isSameAs(first);
    assertThat(again.position()).isZero();
    assertThat(again.limit()).isEqualTo(again.capacity());
    ByteBuffer other = pool.take(50_000);
    assertThat(other).isNotSameAs(first);
    pool.give(again);
    pool.give(other); // past the bound of 64 KiB: not kept
    assertThat(pool.take(50_000)).isSameAs(again);
    assertThat(pool.take(50_000)).isNotSameAs(other);
  }

  @Test
  void aLengthOutOfRangeIsRefused() {
    AlignedBuffers pool = new AlignedBuffers(1 << 20);
    assertThatThrownBy(() -> pool.take(0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("0 bytes");
    assertThatThrownBy(() -> pool.take(-5)).isInstanceOf(IllegalArgumentException.class);
  }
}
