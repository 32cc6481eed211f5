/**
 * The codec's byte layout and shuffle kernels; not API.
 *
 * <p>May import: the JDK alone.
 */
package dev.kvcache.internal.codec;
