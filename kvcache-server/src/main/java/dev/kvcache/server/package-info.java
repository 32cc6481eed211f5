/**
 * kvcache-server, the application: {@link dev.kvcache.server.KvCacheServer} starts Micronaut
 * and says where it listens. Its parts, bottom up: {@code errors}, {@code cache}, {@code access},
 * {@code api}, {@code local}, {@code http}. The packages of this module are the server's inside,
 * not a library API.
 *
 * <p>May import: its sub-packages, {@code dev.kvcache.wire}, and the RAM tier (to hold its zeroing until the server listens).
 */
package dev.kvcache.server;
