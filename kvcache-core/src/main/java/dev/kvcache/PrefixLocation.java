package dev.kvcache;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Where the leading cached blocks of a prompt are, and how long loading them should take: what
 * {@link KvCache#locatePrefix} returns. The runs are in chain order; a tiered cache's prefix can
 * start in RAM and go on in the disk tier, say.
 *
 * <p>An engine compares {@link #estimatedLoad()} with its own prefill time for the same tokens
 * and loads only if that is faster; or it loads the runs that are fast and recomputes from the
 * first slow one. The estimates come from the tiers' recent reads (the tier SPI's {@code
 * LoadRate}), one block after another; an engine that loads blocks in parallel
 * may do better.
 *
 * @param runs the runs of consecutive leading blocks held by one tier, in order; none if the
 *     first block is not cached
 */
public record PrefixLocation(List<Run> runs) {

  /**
   * Consecutive leading blocks held by one tier.
   *
   * @param tier the tier's name, as in the metrics: {@code ram}, {@code spill} (blocks RAM
   *     evicted and not yet written below), {@code disk}, {@code remote}
   * @param blocks how many blocks, at least 1
   * @param estimatedLoad the estimated time to read them; empty if the tier has not timed a read
   *     yet
   */
  public record Run(String tier, int blocks, Optional<Duration> estimatedLoad) {
    public Run {
      Objects.requireNonNull(tier, "tier");
      Objects.requireNonNull(estimatedLoad, "estimatedLoad");
      if (blocks < 1) {
        throw new IllegalArgumentException("a run holds at least one block, got " + blocks);
      }
    }
  }

  /** No leading block cached. */
  public static final PrefixLocation NONE = new PrefixLocation(List.of());

  public PrefixLocation {
    runs = List.copyOf(runs);
  }

  /** {@code blocks} leading blocks in one tier; {@link #NONE} if {@code blocks} is 0. */
  public static PrefixLocation of(String tier, int blocks, Optional<Duration> estimatedLoad) {
    return blocks == 0 ? NONE : new PrefixLocation(List.of(new Run(tier, blocks, estimatedLoad)));
  }

  /** How many leading blocks are cached, as {@link KvCache#lookupPrefix} counts them. */
  public int blocks() {
    int n = 0;
    for (Run run : runs) {
      n += run.blocks();
    }
    return n;
  }

  /** How many of the leading blocks {@code tier} holds. */
  public int blocksIn(String tier) {
    int n = 0;
    for (Run run : runs) {
      if (run.tier().equals(tier)) {
        n += run.blocks();
      }
    }
    return n;
  }

  /**
   * The estimated time to load all the leading blocks: the sum over the runs; zero if there are
   * none; empty if a tier holding some has not timed a read yet.
   */
  public Optional<Duration> estimatedLoad() {
    Duration total = Duration.ZERO;
    for (Run run : runs) {
      if (run.estimatedLoad().isEmpty()) {
        return Optional.empty();
      }
      total = total.plus(run.estimatedLoad().get());
    }
    return Optional.of(total);
  }

  /**
   * This location followed by {@code next}'s runs, a run of the same tier as the last one merged
   * into it.
   */
  public PrefixLocation then(PrefixLocation next) {
    if (next.runs.isEmpty()) {
      return this;
    }
    if (runs.isEmpty()) {
      return next;
    }
    List<Run> joined = new ArrayList<>(runs);
    for (Run run : next.runs) {
      Run last = joined.get(joined.size() - 1);
      if (last.tier().equals(run.tier())) {
        Optional<Duration> sum = last.estimatedLoad().isPresent() && run.estimatedLoad().isPresent()
            ? Optional.of(last.estimatedLoad().get().plus(run.estimatedLoad().get()))
            : Optional.empty();
        joined.set(joined.size() - 1, new Run(run.tier(), last.blocks() + run.blocks(), sum));
      } else {
        joined.add(run);
      }
    }
    return new PrefixLocation(joined);
  }
}
