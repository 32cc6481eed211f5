/**
 * Replays of public request traces: hit ratios of kvcache and of reference cache models, one
 * server or a fleet.
 *
 * <p>May import: kvcache-core, kvcache-disk, kvcache-s3.
 */
package dev.kvcache.bench.trace;
