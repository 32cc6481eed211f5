package dev.kvcache.s3.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The back-off's rules on a clock the test turns: bursts, probes and stamps. */
class StoreStateTest {

  private static final long MS = 1_000_000L;

  private long now = 1_000 * MS;
  private final StoreState state = new StoreState(Duration.ofSeconds(10), () -> now);

  /** Three requests stamped now fail: the first pause begins. */
  private void beginPause() {
    long sent = now;
    for (int i = 0; i < StoreState.FAILURES_TO_PAUSE; i++) {
      assertThat(state.available(sent)).isTrue();
      state.failed("SlowDown", sent);
    }
    assertThat(state.pauses()).isEqualTo(1);
  }

  @Test
  void aRequestLetThroughBeforeThePauseFailsAsPartOfItsBurstHoweverLateItReports() {
    long letThrough = now;
    assertThat(state.available(letThrough)).isTrue();
    now += MS;
    beginPause();
    now += 5 * MS; // its caller was slow to send it: it fails after the pause began
    state.failed("SlowDown", letThrough);
    assertThat(state.pauses()).as("one burst, one pause").isEqualTo(1);
  }

  @Test
  void afterThePauseOneCallerProbesAndItsFailureDoublesTheBackOff() {
    beginPause();
    long during = now + MS;
    now = during;
    assertThat(state.available(during)).as("in the pause").isFalse();
    now += StoreState.FIRST_PAUSE.toNanos(); // past the longest first pause with its jitter
    long probe = now;
    assertThat(state.available(probe)).as("the probe").isTrue();
    assertThat(state.available(now)).as("a second caller while the probe is out").isFalse();
    state.failed("SlowDown", probe);
    assertThat(state.pauses()).as("the probe failed: a second pause").isEqualTo(2);
    assertThat(state.paused()).isTrue();
  }

  @Test
  void aRequestStampedBeforeThePauseIsNotLetThroughAsItsProbe() {
    long stamped = now;
    now += MS;
    beginPause();
    now += StoreState.FIRST_PAUSE.toNanos();
    assertThat(state.available(stamped))
        .as("its failure would count as part of the burst, and the probe would never report")
        .isFalse();
    assertThat(state.available(now)).as("a request stamped now probes").isTrue();
    state.succeeded();
    assertThat(state.paused()).isFalse();
    assertThat(state.available(stamped)).as("no back-off: every request goes").isTrue();
  }

  @Test
  void aProbeGivenUpOnLetsTheNextCallerProbe() {
    beginPause();
    now += StoreState.FIRST_PAUSE.toNanos();
    long probe = now;
    assertThat(state.available(probe)).isTrue();
    assertThat(state.available(now)).isFalse();
    state.abandoned(probe);
    assertThat(state.available(now)).as("the next caller probes").isTrue();
  }
}
