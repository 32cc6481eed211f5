/**
 * The JMH benchmarks, each beside a baseline moving the same bytes in the same run.
 *
 * <p>May import: kvcache-core, kvcache-disk, {@code peers}, JMH.
 */
package dev.kvcache.bench;
