/**
 * Each connection, ahead of Micronaut: its tuning for multi-MiB bodies, the fast paths that answer
 * GETs of cached blocks and store PUTs straight from the frames (HTTP/2) or the codec (HTTP/1.1),
 * bodies that outlive their answers, and the stop's order (listening sockets closed first).
 *
 * <p>May import: kvcache-core, {@code errors}, {@code access}, {@code cache}, {@code api}, {@code
 * s3} (its port's settings), Micronaut and Netty.
 */
package dev.kvcache.server.http;
