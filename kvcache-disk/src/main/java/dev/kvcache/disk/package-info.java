/**
 * The disk tier: blocks as self-describing records in memory-mapped super-block files, with a
 * journal and checkpoints so that a restart finds every block ({@link dev.kvcache.disk.DiskTier}
 * and its parts).
 *
 * <p>May import: kvcache-core's API, {@code spi} and {@code codec}; this module's {@code device} and {@code internal}.
 */
package dev.kvcache.disk;
