/**
 * The {@code kvcache-disk} command (verify, stats, rebuild) for a directory no process has open.
 *
 * <p>May import: picocli, kvcache-core's API and this module's packages.
 */
package dev.kvcache.disk.tool;
