package dev.kvcache.tiered;

import dev.kvcache.GetStatus;

/**
 * The outcome of one read of a {@link TieredCache} batch, and where the block came from.
 *
 * @param status as {@link dev.kvcache.KvCache#getInto} reports it
 * @param source the tier that held the block; {@link Source#NONE} for a miss
 */
public record TieredRead(GetStatus status, Source source) {

  /** Where a read found its block. */
  public enum Source {
    /** The RAM tier. */
    RAM,
    /** A block evicted from RAM and not yet written to the lower tier. */
    SPILL_QUEUE,
    /** The lower tier (disk, or a remote server). */
    LOWER,
    /** No tier: a miss. */
    NONE
  }
}
