/**
 * The stores the benchmarks measure kvcache against, behind one interface.
 *
 * <p>May import: kvcache-core, kvcache-disk, the peers' libraries.
 */
package dev.kvcache.bench.peers;
