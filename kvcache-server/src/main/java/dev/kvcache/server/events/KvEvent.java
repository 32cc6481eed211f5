package dev.kvcache.server.events;

import java.util.Arrays;
import java.util.Objects;

/**
 * One of vLLM's KV events ({@code vllm/distributed/kv_events.py}), as a router reads them: blocks
 * stored in a medium, removed from it, or all cleared. Block hashes are the engine's, as unsigned
 * 64-bit numbers (vLLM's {@code VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES}, its default).
 */
public sealed interface KvEvent {

  /** The medium of a host's RAM, as vLLM names its CPU tier. */
  String CPU = "CPU";

  /** The medium of a disk, as vLLM names its storage tiers. */
  String STORAGE = "STORAGE";

  /**
   * The medium of a store that engines on several hosts share, which Dynamo's router maps to its
   * external tier.
   */
  String SHARED = "SHARED";

  /**
   * Blocks stored: {@code hashes} in chain order, the first one's parent {@code parentHash} (null
   * for the first block of a prompt), their tokens, {@code blockSize} tokens each (or none, as
   * vLLM's storage tiers tell theirs).
   *
   * @param loraName the LoRA adapter the blocks were computed with, or null
   */
  record BlockStored(long[] hashes, Long parentHash, int[] tokens, int blockSize, String loraName,
      String medium) implements KvEvent {
    public BlockStored {
      Objects.requireNonNull(hashes, "hashes");
      Objects.requireNonNull(tokens, "tokens");
      Objects.requireNonNull(medium, "medium");
      if (blockSize < 1 || tokens.length != 0 && tokens.length != hashes.length * blockSize) {
        throw new IllegalArgumentException(hashes.length + " blocks of " + blockSize
            + " tokens each, but " + tokens.length + " tokens");
      }
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof BlockStored b && Arrays.equals(hashes, b.hashes)
          && Objects.equals(parentHash, b.parentHash) && Arrays.equals(tokens, b.tokens)
          && blockSize == b.blockSize && Objects.equals(loraName, b.loraName)
          && medium.equals(b.medium);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(hashes) * 31 + medium.hashCode();
    }

    @Override
    public String toString() {
      return "BlockStored" + Arrays.toString(hashes) + " " + medium;
    }
  }

  /** Blocks removed from {@code medium}. */
  record BlockRemoved(long[] hashes, String medium) implements KvEvent {
    public BlockRemoved {
      Objects.requireNonNull(hashes, "hashes");
      Objects.requireNonNull(medium, "medium");
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof BlockRemoved b && Arrays.equals(hashes, b.hashes)
          && medium.equals(b.medium);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(hashes) * 31 + medium.hashCode();
    }

    @Override
    public String toString() {
      return "BlockRemoved" + Arrays.toString(hashes) + " " + medium;
    }
  }

  /** Every block of the publisher is gone (a restart that kept nothing). */
  record AllBlocksCleared() implements KvEvent {}
}
