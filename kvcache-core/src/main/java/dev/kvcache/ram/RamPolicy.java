package dev.kvcache.ram;

/**
 * Which blocks the RAM tier keeps when it is full ({@link RamTierConfig#policy()}).
 *
 * <p>On the public LLM request traces (Mooncake's conversation and synthetic traces, replayed in
 * {@code docs/benchmarks/traces.md}, "Hit ratio on real request traces") exact LRU gets the most hits of
 * every policy that does not know the future, at every capacity tried, and keeps them when the
 * workload repeats; Caffeine's W-TinyLFU gets fewer from a few thousand blocks up, and fewer with
 * each repetition. W-TinyLFU wins where a few blocks are read again and again while many others
 * pass through once (a hot shared prefix under a scan of one-time blocks): it does not let the
 * one-time blocks push the hot ones out.
 */
public enum RamPolicy {
  /** Exact least recently used: a put or read makes its block the most recent. The default. */
  LRU,
  /** Caffeine's W-TinyLFU: a new block displaces an old one only if it was asked for more often. */
  W_TINY_LFU
}
