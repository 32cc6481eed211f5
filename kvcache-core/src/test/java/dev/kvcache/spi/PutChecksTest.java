package dev.kvcache.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import org.junit.jupiter.api.Test;

/** The checks a tier implementation makes before it stores a block. */
class PutChecksTest {

  private static final BlockKey KEY =
      BlockKey.ofRaw(Namespace.of("model", "bf16", "tp0of1"), new byte[16]);

  private static long rejections(TierCounters counters) {
    return counters.snapshot(0, 0, 0, 0, 0).rejections();
  }

  @Test
  void aBlockUpToTheLargestFitsAndIsNotCounted() {
    TierCounters counters = new TierCounters();
    assertThat(PutChecks.fits(KEY, 1, 1024, counters)).isTrue();
    assertThat(PutChecks.fits(KEY, 1024, 1024, counters)).isTrue();
    assertThat(rejections(counters)).isZero();
  }

  @Test
  void aLargerBlockDoesNotFitAndCountsAsARejection() {
    TierCounters counters = new TierCounters();
    assertThat(PutChecks.fits(KEY, 1025, 1024, counters)).isFalse();
    assertThat(PutChecks.fits(KEY, Integer.MAX_VALUE, 1024, counters)).isFalse();
    assertThat(rejections(counters)).isEqualTo(2);
  }

  @Test
  void anEmptyOrNegativeLengthIsAnErrorNamingTheKeyAndLength() {
    TierCounters counters = new TierCounters();
    assertThatThrownBy(() -> PutChecks.fits(KEY, 0, 1024, counters))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("empty block").hasMessageContaining(KEY.toString())
        .hasMessageContaining("length of 0");
    assertThatThrownBy(() -> PutChecks.fits(KEY, -5, 1024, counters))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("length of -5");
    assertThat(rejections(counters)).isZero();
  }

  @Test
  void aMissingKeyIsAnError() {
    assertThatThrownBy(() -> PutChecks.fits(null, 1, 1024, new TierCounters()))
        .isInstanceOf(NullPointerException.class).hasMessageContaining("key");
  }
}
