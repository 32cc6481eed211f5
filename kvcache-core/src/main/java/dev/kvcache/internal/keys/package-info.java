/**
 * How a key is derived from its namespace and tokens (specified bit for bit in {@code
 * docs/keys.md}); not API.
 *
 * <p>May import: the JDK alone.
 */
package dev.kvcache.internal.keys;
