/**
 * The disk tier's byte layouts, journal, checkpoints, recovery and direct I/O; not API.
 *
 * <p>May import: kvcache-core's API, {@code dev.kvcache.disk} and {@code device}.
 */
package dev.kvcache.disk.internal;
