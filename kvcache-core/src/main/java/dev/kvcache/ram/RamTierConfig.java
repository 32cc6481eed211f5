package dev.kvcache.ram;

import dev.kvcache.Namespace;
import dev.kvcache.internal.memory.OffHeapMemory;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;

/**
 * Settings of a {@link RamTier}, validated when constructed.
 *
 * @param capacityBytes the hard budget of off-heap memory, reserved when the tier is built; rounded
 *     down to whole 4 KiB granules. At least 64 KiB.
 * @param maxBlockBytes the largest block accepted; larger puts return {@link
 *     dev.kvcache.PutStatus#REJECTED_TOO_LARGE}. At most the arena size and the capacity.
 * @param arenaBytes the size of each contiguous region the capacity is reserved in; a multiple of
 *     4 KiB, at most 1 GiB.
 * @param policy which blocks the tier keeps when full; {@link RamPolicy#LRU} by default
 * @param sharedMemoryDir null (the default) for private direct memory; or a directory on a tmpfs
 *     (such as {@code /dev/shm}) where the memory is reserved as files that other processes of
 *     the same user on this host may map, so that they copy a leased block straight out of RAM
 *     ({@link dev.kvcache.BlockLease#sharedMemory()}) instead of receiving it through a socket
 * @param quotas the bytes of blocks each of these namespaces may hold at most, counted as the tier
 *     counts its capacity (whole 4 KiB granules); a namespace at its quota evicts its own coldest
 *     blocks, never another's, and the namespaces without one (with keys that name none) share
 *     what the quotas leave. Empty (the default): one policy over every block.
 */
public record RamTierConfig(long capacityBytes, int maxBlockBytes, int arenaBytes,
    RamPolicy policy, Path sharedMemoryDir, Map<Namespace, Long> quotas) {

  /** Default {@link #maxBlockBytes}: 64 MiB, or the capacity if smaller. */
  public static final int DEFAULT_MAX_BLOCK_BYTES = 64 << 20;

  /** Default {@link #arenaBytes}: 1 GiB. */
  public static final int DEFAULT_ARENA_BYTES = OffHeapMemory.MAX_ARENA_BYTES;

  /** The smallest capacity accepted. */
  public static final long MIN_CAPACITY_BYTES = 64 << 10;

  /** The smallest quota accepted: one 4 KiB granule. */
  public static final long MIN_QUOTA_BYTES = OffHeapMemory.GRANULE_BYTES;

  /** Default {@link #policy}. */
  public static final RamPolicy DEFAULT_POLICY = RamPolicy.LRU;

  public RamTierConfig {
    Objects.requireNonNull(policy, "policy");
    quotas = Map.copyOf(Objects.requireNonNull(quotas, "quotas"));
    long quoted = 0;
    for (Map.Entry<Namespace, Long> q : quotas.entrySet()) {
      if (q.getValue() < MIN_QUOTA_BYTES) {
        throw new IllegalArgumentException("the RAM quota of " + q.getKey() + " is "
            + q.getValue() + " bytes; it must be at least " + MIN_QUOTA_BYTES);
      }
      quoted += q.getValue();
    }
    if (quoted >= capacityBytes) {
      throw new IllegalArgumentException("the RAM quotas (" + quoted + " bytes in all) must leave"
          + " some of the RAM tier's capacity (" + capacityBytes + " bytes) to the other"
          + " namespaces");
    }
    if (capacityBytes < MIN_CAPACITY_BYTES) {
      throw new IllegalArgumentException(
          "RAM tier capacity must be at least " + MIN_CAPACITY_BYTES + " bytes, got "
              + capacityBytes);
    }
    if (arenaBytes < OffHeapMemory.GRANULE_BYTES
        || arenaBytes > OffHeapMemory.MAX_ARENA_BYTES
        || arenaBytes % OffHeapMemory.GRANULE_BYTES != 0) {
      throw new IllegalArgumentException(
          "arenaBytes must be a multiple of " + OffHeapMemory.GRANULE_BYTES + " up to "
              + OffHeapMemory.MAX_ARENA_BYTES + ", got " + arenaBytes);
    }
    long largest = largestBlockBytes(capacityBytes, arenaBytes);
    if (maxBlockBytes < 1 || maxBlockBytes > largest) {
      throw new IllegalArgumentException(
          "maxBlockBytes must be 1 to " + largest + " (the arena size and the capacity, in whole"
              + " 4 KiB granules), got " + maxBlockBytes);
    }
  }

  /** A configuration with the default policy, in private memory. */
  public RamTierConfig(long capacityBytes, int maxBlockBytes, int arenaBytes) {
    this(capacityBytes, maxBlockBytes, arenaBytes, DEFAULT_POLICY);
  }

  /** A configuration in private memory. */
  public RamTierConfig(long capacityBytes, int maxBlockBytes, int arenaBytes, RamPolicy policy) {
    this(capacityBytes, maxBlockBytes, arenaBytes, policy, null);
  }

  /** A configuration without quotas. */
  public RamTierConfig(long capacityBytes, int maxBlockBytes, int arenaBytes, RamPolicy policy,
      Path sharedMemoryDir) {
    this(capacityBytes, maxBlockBytes, arenaBytes, policy, sharedMemoryDir, Map.of());
  }

  /** A configuration with the default block limit, arena size and policy. */
  public static RamTierConfig ofCapacity(long capacityBytes) {
    int maxBlock =
        (int) Math.min(DEFAULT_MAX_BLOCK_BYTES, largestBlockBytes(capacityBytes, DEFAULT_ARENA_BYTES));
    return new RamTierConfig(capacityBytes, maxBlock, DEFAULT_ARENA_BYTES);
  }

  private static long largestBlockBytes(long capacityBytes, int arenaBytes) {
    long usable = capacityBytes / OffHeapMemory.GRANULE_BYTES * OffHeapMemory.GRANULE_BYTES;
    return Math.min(arenaBytes, usable);
  }

  /** A copy with another block limit. */
  public RamTierConfig withMaxBlockBytes(int maxBlockBytes) {
    return new RamTierConfig(capacityBytes, maxBlockBytes, arenaBytes, policy, sharedMemoryDir,
        quotas);
  }

  /** A copy with another arena size. */
  public RamTierConfig withArenaBytes(int arenaBytes) {
    return new RamTierConfig(capacityBytes, Math.min(maxBlockBytes, arenaBytes), arenaBytes, policy,
        sharedMemoryDir, quotas);
  }

  /** A copy with another policy. */
  public RamTierConfig withPolicy(RamPolicy policy) {
    return new RamTierConfig(capacityBytes, maxBlockBytes, arenaBytes, policy, sharedMemoryDir,
        quotas);
  }

  /**
   * A copy whose memory is reserved as files in {@code dir} (a tmpfs such as {@code /dev/shm}),
   * which other processes of the same user may map; null for private memory.
   */
  public RamTierConfig withSharedMemory(Path dir) {
    return new RamTierConfig(capacityBytes, maxBlockBytes, arenaBytes, policy, dir, quotas);
  }

  /** A copy with these quotas in place of its own ({@link #quotas()}). */
  public RamTierConfig withQuotas(Map<Namespace, Long> quotas) {
    return new RamTierConfig(capacityBytes, maxBlockBytes, arenaBytes, policy, sharedMemoryDir,
        quotas);
  }
}
