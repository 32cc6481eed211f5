/**
 * Benchmarks of the client and the server, and the floor programs that move the same bytes with
 * plain system calls.
 *
 * <p>May import: kvcache-core and kvcache-client, Netty; the server it runs as a process, from its jar.
 */
package dev.kvcache.bench.remote;
