/**
 * The cache behind the server: its settings ({@code kvcache.cache.*}) fed to the one {@code
 * KvCacheBuilder}, opened at start and closed at stop, its health and its metrics, read from
 * what the tiers report of themselves. No tier class is named here but in settings.
 *
 * <p>May import: kvcache-core's API, {@code spi} and {@code tiered} (and the RAM tier's settings types), Micronaut; no other package of the server.
 */
package dev.kvcache.server.cache;
