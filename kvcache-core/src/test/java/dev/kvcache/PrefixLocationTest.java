package dev.kvcache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.PrefixLocation.Run;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class PrefixLocationTest {

  private static Optional<Duration> ms(long millis) {
    return Optional.of(Duration.ofMillis(millis));
  }

  @Test
  void sumsItsRunsAndMergesATierThatGoesOn() {
    PrefixLocation location = PrefixLocation.of("ram", 2, ms(1))
        .then(PrefixLocation.of("ram", 1, ms(2)))
        .then(PrefixLocation.of("disk", 3, ms(30)))
        .then(PrefixLocation.NONE);
    assertThat(location.runs()).containsExactly(new Run("ram", 3, ms(3)), new Run("disk", 3, ms(30)));
    assertThat(location.blocks()).isEqualTo(6);
    assertThat(location.blocksIn("disk")).isEqualTo(3);
    assertThat(location.blocksIn("remote")).isZero();
    assertThat(location.estimatedLoad()).isEqualTo(ms(33));
  }

  @Test
  void hasNoEstimateIfATierHoldingSomeHasNone() {
    PrefixLocation location = PrefixLocation.of("ram", 2, ms(1))
        .then(PrefixLocation.of("remote", 1, Optional.empty()));
    assertThat(location.estimatedLoad()).isEmpty();
    assertThat(PrefixLocation.NONE.estimatedLoad()).isEqualTo(ms(0));
    assertThat(PrefixLocation.of("ram", 0, Optional.empty())).isSameAs(PrefixLocation.NONE);
  }

  @Test
  void refusesAnEmptyRun() {
    assertThatThrownBy(() -> new PrefixLocation(List.of(new Run("ram", 0, ms(0)))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least one block");
  }
}
