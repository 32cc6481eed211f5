/**
 * The streaming LZ4 block codec: a chunked, checksummed container with optional shuffle
 * {@link dev.kvcache.codec.Filter}s, whole or in parts.
 *
 * <p>May import: the JDK, lz4-java and {@code internal.codec}; not the API, so that the codec stands alone.
 */
package dev.kvcache.codec;
