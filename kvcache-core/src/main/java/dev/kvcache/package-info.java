/**
 * The API an engine uses: {@link dev.kvcache.KvCache} (lookup, pin, get, put, write in parts),
 * the keys ({@link dev.kvcache.BlockKey}, {@link dev.kvcache.PrefixKeys}, {@link
 * dev.kvcache.Namespace}), and the values and statuses its calls return. It holds the API alone:
 * tiers and the assembly of a cache are in {@code spi}, {@code ram} and {@code tiered}.
 *
 * <p>May import: the JDK and {@code internal.keys}; no other package of kvcache, so that every other package may import this one.
 */
package dev.kvcache;
