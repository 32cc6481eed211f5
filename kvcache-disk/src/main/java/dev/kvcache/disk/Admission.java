package dev.kvcache.disk;

/** Which puts the disk tier writes, to spare the device writes of blocks that are never reused. */
public enum Admission {
  /** Every put is written. The default. */
  ALWAYS,
  /**
   * A block is written the second time its key is put within a while (a Bloom filter remembers
   * the keys seen, and forgets them all once it holds as many as about an eighth of the capacity's
   * worth of 64 KiB blocks); the first put returns {@link dev.kvcache.PutStatus#NOT_ADMITTED}.
   * Puts of keys already stored are always written. Suits a tier fed by RAM evictions, where a
   * block evicted twice has proved it comes back.
   */
  SEEN_BEFORE
}
