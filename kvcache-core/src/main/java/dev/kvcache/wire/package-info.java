/**
 * The names of kvcache-server's HTTP API that the server and the Java client share ({@link
 * dev.kvcache.wire.Wire}).
 *
 * <p>May import: the API and {@code spi} ({@code Crc32c}).
 */
package dev.kvcache.wire;
