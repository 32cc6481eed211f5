/**
 * The Java client of kvcache-server as a tier: {@link dev.kvcache.client.RemoteTier}, a set of
 * servers on its own or under RAM and disk, over HTTP/2.
 *
 * <p>May import: kvcache-core's API, {@code spi}, {@code codec} and {@code wire}, Netty and Jackson; never kvcache-server, which it reaches over the wire.
 */
package dev.kvcache.client;
