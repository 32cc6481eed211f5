package dev.kvcache;

/** The outcome of a put. Only {@link #STORED} means the block can now be found. */
public enum PutStatus {
  /** The block was written and published; it stays findable until it is evicted or deleted. */
  STORED,
  /**
   * The tier's admission policy declined the block; it cannot be found. In the RAM tier the block
   * was written, but the eviction policy chose it as the victim before the put returned (its
   * estimated frequency was lower than that of the blocks it would have displaced), and its bytes
   * went to the eviction listener, if one is set, like any evicted block's. In a disk tier with
   * {@code Admission.SEEN_BEFORE} it was not written, its key being new.
   */
  NOT_ADMITTED,
  /** The block is larger than the tier's maximum block size; nothing changed. */
  REJECTED_TOO_LARGE,
  /**
   * No room could be made: the memory is held by open leases (including leases the eviction
   * listener has not closed yet) or in-flight writes. The block was not stored, though colder
   * blocks may have been evicted while looking for room; retry after leases are closed.
   */
  REJECTED_NO_SPACE,
  /**
   * The put could not keep its durability mode's promise, so the block was not stored: under
   * {@link dev.kvcache.tiered.Durability#WRITE_BEHIND}, the lower tier's writes fail (a full or
   * failing disk) and as many acknowledged blocks as the mode's window allows are already held by
   * RAM alone. The key's older block is gone too. Puts are taken again once a write to the lower
   * tier succeeds; the cache's health says why meanwhile.
   */
  REJECTED_NOT_DURABLE
}
