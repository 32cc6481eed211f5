package dev.kvcache.jlama;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.PrefixLocation;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Found blocks are loaded unless computing their tokens is expected to be faster. */
class LoadOrPrefillTest {

  private static PrefixLocation found(int blocks, Duration estimate) {
    return PrefixLocation.of("ram", blocks, Optional.ofNullable(estimate));
  }

  @Test
  void blocksAreLoadedWhileNothingIsKnownOfTheSpeeds() {
    LoadOrPrefill d = LoadOrPrefill.measured();
    assertThat(d.toLoad(found(4, Duration.ofSeconds(10)), 16)).as("no prefill measured")
        .isEqualTo(4);
    d.prefilled(1000, 1_000_000_000L); // 1000 tokens a second
    assertThat(d.toLoad(found(4, null), 16)).as("no estimate from the cache").isEqualTo(4);
    assertThat(d.recomputed()).isZero();
  }

  @Test
  void theFasterOfTheEstimatedLoadAndTheMeasuredPrefillWins() {
    LoadOrPrefill d = LoadOrPrefill.measured();
    d.prefilled(1000, 1_000_000_000L); // 4 blocks of 16 tokens: 64 ms
    assertThat(d.toLoad(found(4, Duration.ofMillis(10)), 16)).isEqualTo(4);
    assertThat(d.toLoad(found(4, Duration.ofMillis(100)), 16)).isZero();
    assertThat(d.recomputed()).isEqualTo(4);
    // the copies measured count too: 4 blocks at 100 a second take 40 ms more
    d.loaded(100, 1_000_000_000L);
    assertThat(d.toLoad(found(4, Duration.ofMillis(30)), 16)).isZero();
    assertThat(d.toLoad(new PrefixLocation(List.of(
        new PrefixLocation.Run("ram", 2, Optional.of(Duration.ofMillis(1))),
        new PrefixLocation.Run("disk", 2, Optional.empty()))), 16))
        .as("a tier with no estimate: loaded").isEqualTo(4);
  }

  @Test
  void alwaysLoadLoadsWhateverTheSpeeds() {
    LoadOrPrefill d = LoadOrPrefill.alwaysLoad();
    d.prefilled(1_000_000, 1);
    assertThat(d.toLoad(found(4, Duration.ofHours(1)), 16)).isEqualTo(4);
    assertThat(d.prefillTokensPerSecond()).isPositive();
  }
}
