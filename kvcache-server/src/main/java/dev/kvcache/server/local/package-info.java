/**
 * Copies of pinned blocks into a file of a client on the same host, which the server writes in
 * one request, and its metrics.
 *
 * <p>May import: kvcache-core, {@code errors}, {@code access}, {@code cache}, {@code api}, Micronaut.
 */
package dev.kvcache.server.local;
