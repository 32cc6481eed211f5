package dev.kvcache.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class LoadRateTest {

  @Test
  void hasNoEstimateUntilAReadIsRecordedAndNothingToLoadTakesNoTime() {
    LoadRate rate = new LoadRate();
    assertThat(rate.measured()).isFalse();
    assertThat(rate.estimate(3, 3 << 20)).isEmpty();
    assertThat(rate.estimate(0, 0)).contains(Duration.ZERO);
  }

  @Test
  void readsOfTwoSizesSeparateLatencyFromThroughput() {
    LoadRate rate = new LoadRate();
    for (int i = 0; i < 200; i++) {
      long bytes = i % 2 == 0 ? 1_000 : 100_000;
      rate.record(bytes, 5_000 + 2 * bytes); // 5 us per read, 2 ns per byte (500 MB/s)
    }
    assertThat(rate.latencyNanos()).isCloseTo(5_000, within(1.0));
    assertThat(rate.bytesPerSecond()).isCloseTo(5e8, within(1e5));
    assertThat(rate.estimate(4, 4 * 50_000).orElseThrow().toNanos())
        .isCloseTo(4 * 5_000 + 2 * 4 * 50_000L, within(10L));
  }

  @Test
  void readsOfOneSizeAreTakenAsProportionalToTheirBytes() {
    LoadRate rate = new LoadRate();
    for (int i = 0; i < 50; i++) {
      rate.record(65_536, 20_000);
    }
    assertThat(rate.latencyNanos()).isZero();
    assertThat(rate.estimate(10, -1)).contains(Duration.ofNanos(200_000));
    assertThat(rate.estimate(10, 10 * 65_536L)).contains(Duration.ofNanos(200_000));
  }

  @Test
  void followsATierThatSlowsDown() {
    LoadRate rate = new LoadRate();
    for (int i = 0; i < 50; i++) {
      rate.record(1 << 20, 1_000_000);
    }
    for (int i = 0; i < 40; i++) { // ten times slower from now on
      rate.record(1 << 20, 10_000_000);
    }
    // the newest reads weigh 0.1 each: after 40 of them the old rate counts for 0.9^40 = 1.5%
    assertThat(rate.estimate(1, 1 << 20).orElseThrow().toNanos())
        .isBetween(9_500_000L, 10_000_000L);
  }

  @Test
  void ignoresEmptyReads() {
    LoadRate rate = new LoadRate();
    rate.record(0, 1_000);
    rate.record(1_000, 0);
    assertThat(rate.measured()).isFalse();
  }
}
