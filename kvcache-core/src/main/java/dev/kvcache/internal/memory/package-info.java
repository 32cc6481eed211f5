/**
 * The RAM tier's allocator: arenas of direct or shared memory carved into runs of granules,
 * blocks with reference counts, compaction; also used by the disk tier's memory device. Not API.
 *
 * <p>May import: the JDK and the API.
 */
package dev.kvcache.internal.memory;
