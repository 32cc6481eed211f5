/**
 * Every file operation of the disk tier: the operating system's files, or files in direct
 * memory.
 *
 * <p>May import: the JDK and {@code dev.kvcache.internal.memory}.
 */
package dev.kvcache.disk.device;
