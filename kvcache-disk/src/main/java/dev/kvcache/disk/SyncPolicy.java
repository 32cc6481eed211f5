package dev.kvcache.disk;

/**
 * When the disk tier forces what it wrote to the device. Whatever the policy, a put that returned
 * {@link dev.kvcache.PutStatus#STORED} has its bytes and its journal entry in the operating
 * system's hands, so it survives a crash of the process; the policy decides what survives a crash
 * of the machine or a power loss.
 */
public enum SyncPolicy {
  /** Never forces: the operating system writes back when it likes. Fastest; a power loss may lose
   * the last puts (they read back as misses, never as wrong bytes). */
  NONE,
  /** Forces the super-blocks and the journal every {@link DiskTierConfig#syncIntervalMillis()}: a
   * power loss loses at most that window. The default. */
  PERIODIC,
  /** Forces the block and its journal entry before each put returns (concurrent puts share the
   * journal's force): every acknowledged put survives a power loss. */
  ALWAYS
}
