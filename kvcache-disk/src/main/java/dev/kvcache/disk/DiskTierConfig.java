package dev.kvcache.disk;

import dev.kvcache.codec.BlockCodec;
import dev.kvcache.disk.device.FileSystemDevice;
import dev.kvcache.disk.device.StorageDevice;
import dev.kvcache.disk.internal.RecordLayout;
import dev.kvcache.seal.MasterKeys;
import dev.kvcache.Namespace;
import java.nio.file.Path;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Settings of a {@link DiskTier}, validated by {@link Builder#build()}.
 *
 * <pre>{@code
 * DiskTierConfig config = DiskTierConfig.builder(Path.of("/var/cache/kv"), 200L << 30)
 *     .syncPolicy(SyncPolicy.PERIODIC)
 *     .build();
 * }</pre>
 */
public final class DiskTierConfig {

  /**
   * Default super-block size: 256 MiB, or an eighth of the capacity if smaller; when {@link
   * Builder#maxBlockBytes} is set and such a super-block cannot hold that block, the smallest that
   * can.
   */
  public static final long DEFAULT_SUPER_BLOCK_BYTES = 256L << 20;
  /** Largest super-block: 1 GiB (a super-block is mapped as one buffer). */
  public static final long MAX_SUPER_BLOCK_BYTES = 1L << 30;
  /** Smallest super-block: 64 KiB. */
  public static final long MIN_SUPER_BLOCK_BYTES = 64L << 10;
  /** Default block limit: 64 MiB, or what fits in a super-block if less. */
  public static final int DEFAULT_MAX_BLOCK_BYTES = 64 << 20;
  /** The most free space the default floor leaves on the file system: 1 GiB. */
  public static final long DEFAULT_MIN_FREE_BYTES = 1L << 30;
  /** The default floor as a share of the file system's size, when that is smaller: 5%. */
  public static final int DEFAULT_MIN_FREE_PERCENT = 5;
  /** Default interval of {@link SyncPolicy#PERIODIC}: one second. */
  public static final long DEFAULT_SYNC_INTERVAL_MILLIS = 1000;
  /** Default pace of background rewrites: 256 MiB/s. */
  public static final long DEFAULT_RECLAIM_BYTES_PER_SECOND = 256L << 20;
  /**
   * Default rate of the background scrub: 16 MiB/s, a pass over 1 TiB of files in about 18 hours,
   * a small share of what a disk reads.
   */
  public static final long DEFAULT_SCRUB_BYTES_PER_SECOND = 16L << 20;

  /**
   * Whether payloads are written past the page cache by default: yes. Sustained puts through the
   * server ran at about twice the speed, for half the CPU, of the same writes through the page
   * cache with its periodic sync ({@code docs/benchmarks/puts-under-pressure.md}, "A PUT, socket to device").
   */
  public static final boolean DEFAULT_DIRECT_WRITES = true;
  /**
   * Whether blocks not in the page cache are read past it by default: yes. Reading a part of the
   * blocks cold, direct reads ran at 1.6–8.2 times the speed of the same reads through the
   * mapping, whose read-ahead brings in what nobody asked for; only whole reads one block at a
   * time in the order the blocks were written favoured the mapping, for blocks up to 2 MiB
   * ({@code docs/benchmarks/disk-tier.md}, "Cold reads").
   */
  public static final boolean DEFAULT_DIRECT_READS = true;
  /** Default journal size that triggers a checkpoint: 64 MiB (a million entries). */
  public static final long DEFAULT_CHECKPOINT_JOURNAL_BYTES = 64L << 20;

  private final Path directory;
  private final long capacityBytes;
  private final long superBlockBytes;
  private final int maxBlockBytes;
  private final SyncPolicy syncPolicy;
  private final long syncIntervalMillis;
  private final long minFreeBytes;
  private final long checkpointJournalBytes;
  private final BlockCodec codec;
  private final long reclaimBytesPerSecond;
  private final long scrubBytesPerSecond;
  private final boolean directWrites;
  private final boolean directReads;
  private final Admission admission;
  private final StorageDevice device;
  private final Map<Namespace, Long> quotas;
  private final MasterKeys masterKeys;
  private final Set<Namespace> sealed;

  private DiskTierConfig(Builder b) {
    this.directory = b.directory;
    this.capacityBytes = b.capacityBytes;
    this.superBlockBytes = b.superBlockBytes;
    this.maxBlockBytes = b.maxBlockBytes;
    this.syncPolicy = b.syncPolicy;
    this.syncIntervalMillis = b.syncIntervalMillis;
    this.minFreeBytes = b.minFreeBytes;
    this.checkpointJournalBytes = b.checkpointJournalBytes;
    this.codec = b.codec;
    this.reclaimBytesPerSecond = b.reclaimBytesPerSecond;
    this.scrubBytesPerSecond = b.scrubBytesPerSecond;
    this.directWrites = b.directWrites;
    this.directReads = b.directReads;
    this.admission = b.admission;
    this.device = b.device;
    this.quotas = Map.copyOf(b.quotas);
    this.masterKeys = b.masterKeys;
    this.sealed = Set.copyOf(b.sealed);
  }

  /** The master keys sealed namespaces' blocks are sealed under; null if none is sealed. */
  public MasterKeys masterKeys() {
    return masterKeys;
  }

  /** The namespaces whose blocks are sealed ({@link Builder#sealing}); none by default. */
  public Set<Namespace> sealed() {
    return sealed;
  }

  /**
   * The bytes of files each namespace with a quota may fill at most ({@link Builder#quota}); none
   * by default.
   */
  public Map<Namespace, Long> quotas() {
    return quotas;
  }

  /** A builder with the defaults, for a tier in {@code directory} of {@code capacityBytes}. */
  public static Builder builder(Path directory, long capacityBytes) {
    return new Builder(directory, capacityBytes);
  }

  /** The directory holding the tier's files; created if missing. */
  public Path directory() {
    return directory;
  }

  /** Hard cap on the bytes the tier's files take: records, garbage and metadata. */
  public long capacityBytes() {
    return capacityBytes;
  }

  /** Size of each super-block file. */
  public long superBlockBytes() {
    return superBlockBytes;
  }

  /** The largest block accepted. */
  public int maxBlockBytes() {
    return maxBlockBytes;
  }

  public SyncPolicy syncPolicy() {
    return syncPolicy;
  }

  /** How often {@link SyncPolicy#PERIODIC} forces writes to the device. */
  public long syncIntervalMillis() {
    return syncIntervalMillis;
  }

  /**
   * Free space the tier leaves on the file system, whatever its capacity; -1 for the default,
   * {@link #defaultMinFreeBytes} of the file system the directory is on.
   */
  public long minFreeBytes() {
    return minFreeBytes;
  }

  /**
   * The default free-space floor on a file system of {@code fileSystemBytes}: the smaller of
   * {@value #DEFAULT_MIN_FREE_BYTES} bytes (1 GiB) and {@value #DEFAULT_MIN_FREE_PERCENT}% of it,
   * so that a small file system (a 256 MiB tmpfs) keeps most of its room for the tier.
   */
  public static long defaultMinFreeBytes(long fileSystemBytes) {
    return Math.min(DEFAULT_MIN_FREE_BYTES, fileSystemBytes / 100 * DEFAULT_MIN_FREE_PERCENT);
  }

  /** Journal size past which the index is checkpointed and a new journal started. */
  public long checkpointJournalBytes() {
    return checkpointJournalBytes;
  }

  /** The device the tier's files are on: {@link FileSystemDevice#INSTANCE} unless set. */
  public StorageDevice device() {
    return device;
  }

  /** The codec blocks are stored with, or null to store them as they are. */
  public BlockCodec codec() {
    return codec;
  }

  /** The most bytes per second the background thread rewrites while reclaiming space. */
  public long reclaimBytesPerSecond() {
    return reclaimBytesPerSecond;
  }

  /** The most bytes per second the background scrub reads; 0 when there is no scrub. */
  public long scrubBytesPerSecond() {
    return scrubBytesPerSecond;
  }

  /** Whether block payloads are written past the page cache where the device takes it. */
  public boolean directWrites() {
    return directWrites;
  }

  /** Whether blocks not in the page cache are read past it where the device takes it. */
  public boolean directReads() {
    return directReads;
  }

  /** Which puts are written. */
  public Admission admission() {
    return admission;
  }

  /** Settings of a {@link DiskTierConfig}. */
  public static final class Builder {
    private final Path directory;
    private final long capacityBytes;
    private long superBlockBytes = -1;
    private int maxBlockBytes = -1;
    private SyncPolicy syncPolicy = SyncPolicy.PERIODIC;
    private long syncIntervalMillis = DEFAULT_SYNC_INTERVAL_MILLIS;
    private long minFreeBytes = -1;
    private long checkpointJournalBytes = DEFAULT_CHECKPOINT_JOURNAL_BYTES;
    private BlockCodec codec;
    private long reclaimBytesPerSecond = DEFAULT_RECLAIM_BYTES_PER_SECOND;
    private long scrubBytesPerSecond = DEFAULT_SCRUB_BYTES_PER_SECOND;
    private boolean directWrites = DEFAULT_DIRECT_WRITES;
    private boolean directReads = DEFAULT_DIRECT_READS;
    private Admission admission = Admission.ALWAYS;
    private StorageDevice device = FileSystemDevice.INSTANCE;
    private final Map<Namespace, Long> quotas = new LinkedHashMap<>();
    private MasterKeys masterKeys;
    private final Set<Namespace> sealed = new LinkedHashSet<>();

    private Builder(Path directory, long capacityBytes) {
      this.directory = Objects.requireNonNull(directory, "directory");
      this.capacityBytes = capacityBytes;
    }

    /** Size of each super-block file: 64 KiB to 1 GiB, a multiple of 4 KiB. */
    public Builder superBlockBytes(long superBlockBytes) {
      this.superBlockBytes = superBlockBytes;
      return this;
    }

    /** The largest block accepted; larger puts return {@code REJECTED_TOO_LARGE}. */
    public Builder maxBlockBytes(int maxBlockBytes) {
      this.maxBlockBytes = maxBlockBytes;
      return this;
    }

    public Builder syncPolicy(SyncPolicy syncPolicy) {
      this.syncPolicy = Objects.requireNonNull(syncPolicy, "syncPolicy");
      return this;
    }

    /** Interval of {@link SyncPolicy#PERIODIC}, in milliseconds; at least 1. */
    public Builder syncIntervalMillis(long syncIntervalMillis) {
      this.syncIntervalMillis = syncIntervalMillis;
      return this;
    }

    /**
     * Free space to leave on the file system; 0 to fill it up to the capacity; -1, the default,
     * for {@link DiskTierConfig#defaultMinFreeBytes} of the file system.
     */
    public Builder minFreeBytes(long minFreeBytes) {
      this.minFreeBytes = minFreeBytes;
      return this;
    }

    /** Journal size that triggers a checkpoint; at least 64 KiB. */
    public Builder checkpointJournalBytes(long checkpointJournalBytes) {
      this.checkpointJournalBytes = checkpointJournalBytes;
      return this;
    }

    /**
     * The device the tier's files are on: the file system ({@link FileSystemDevice#INSTANCE}, the
     * default), or files in memory ({@link dev.kvcache.disk.device.MemoryDevice}, to measure the
     * tier's own cost).
     */
    public Builder device(StorageDevice device) {
      this.device = Objects.requireNonNull(device, "device");
      return this;
    }

    /** Stores blocks encoded with {@code codec} (null, the default: as they are). */
    public Builder codec(BlockCodec codec) {
      this.codec = codec;
      return this;
    }

    /** The most bytes per second rewritten in the background while reclaiming space; at least 1. */
    public Builder reclaimBytesPerSecond(long reclaimBytesPerSecond) {
      this.reclaimBytesPerSecond = reclaimBytesPerSecond;
      return this;
    }

    /**
     * The most bytes per second the background scrub reads, checking every block's record against
     * its checksum so that damage is found (and the block dropped) before a read meets it; 0 for
     * no scrub. Default {@value DiskTierConfig#DEFAULT_SCRUB_BYTES_PER_SECOND}.
     */
    public Builder scrubBytesPerSecond(long scrubBytesPerSecond) {
      this.scrubBytesPerSecond = scrubBytesPerSecond;
      return this;
    }

    /**
     * Whether the payloads of blocks larger than a page are written past the page cache ({@code
     * O_DIRECT}, from aligned buffers, several writes in flight) where the device's files take
     * it ({@link dev.kvcache.disk.device.DeviceFile#directAlignment}); elsewhere, and for headers,
     * journal, checkpoints, encoded blocks and compaction's moves, writes go through the page
     * cache. A record larger than a page then has its pages to itself. Default {@value
     * DiskTierConfig#DEFAULT_DIRECT_WRITES}; false writes everything through the page cache, which
     * then also holds what was written for reads to find.
     */
    public Builder directWrites(boolean directWrites) {
      this.directWrites = directWrites;
      return this;
    }

    /**
     * Whether a read of a block of at least 64 KiB, stored raw, whose pages are not all in the
     * page cache reads it past the page cache ({@code O_DIRECT}, into a pooled aligned buffer,
     * several chunks in flight) where the device's files take it, instead of faulting it in
     * through the mapping; blocks in the page cache are still read, or leased without a copy, from
     * the mapping. Such a read leaves nothing in the page cache: a tier without RAM above it that
     * reads the same blocks again may want false, so that the page cache keeps them. Default
     * {@value DiskTierConfig#DEFAULT_DIRECT_READS}.
     */
    public Builder directReads(boolean directReads) {
      this.directReads = directReads;
      return this;
    }

    /** Which puts are written; default {@link Admission#ALWAYS}. */
    public Builder admission(Admission admission) {
      this.admission = Objects.requireNonNull(admission, "admission");
      return this;
    }

    /**
     * The bytes of super-block files {@code namespace}'s blocks may fill at most: its blocks go to
     * super-blocks of their own, and when a new one would pass the quota, the namespace's own
     * oldest is reclaimed (its blocks read since they were written moved forward, as the tier
     * reclaims any), never another namespace's. The namespaces without a quota share the rest of
     * the capacity, and borrow what a quota leaves unused until its namespace needs it back. At
     * least 4 super-blocks, and the quotas must leave 4 to the others.
     */
    public Builder quota(Namespace namespace, long bytes) {
      quotas.put(Objects.requireNonNull(namespace, "namespace"), bytes);
      return this;
    }

    /**
     * Seals the blocks of {@code namespaces} at rest: AES-256-GCM under a key per namespace,
     * derived from {@code masterKeys} (new blocks under its current key) and a random salt the
     * tier keeps in its directory ({@code salts/}). A sealed block is read by a copy, never leased
     * from its file, and is stored without the codec; a block that does not open is a miss,
     * counted, and dropped. {@link DiskTier#shred} destroys a namespace's salt, and with it every
     * block sealed under it.
     */
    public Builder sealing(MasterKeys masterKeys, Collection<Namespace> namespaces) {
      this.masterKeys = Objects.requireNonNull(masterKeys, "masterKeys");
      this.sealed.addAll(namespaces);
      return this;
    }

    /** Sets every quota in {@code quotas} ({@link #quota}). */
    public Builder quotas(Map<Namespace, Long> quotas) {
      quotas.forEach(this::quota);
      return this;
    }

    /**
     * Validates the settings.
     *
     * @throws IllegalArgumentException naming the first setting out of range
     */
    public DiskTierConfig build() {
      boolean sizedForMaxBlock = false;
      if (superBlockBytes < 0) {
        long eighth = capacityBytes / 8 / RecordLayout.PAGE * RecordLayout.PAGE;
        superBlockBytes = Math.max(MIN_SUPER_BLOCK_BYTES, Math.min(DEFAULT_SUPER_BLOCK_BYTES, eighth));
        if (maxBlockBytes > 0 && largestBlockBytes() < maxBlockBytes) {
          superBlockBytes = smallestSuperBlockFor(maxBlockBytes); // the largest block must fit
          sizedForMaxBlock = true;
        }
      }
      if (superBlockBytes < MIN_SUPER_BLOCK_BYTES || superBlockBytes > MAX_SUPER_BLOCK_BYTES
          || superBlockBytes % RecordLayout.PAGE != 0) {
        throw new IllegalArgumentException("superBlockBytes must be a multiple of 4 KiB from "
            + MIN_SUPER_BLOCK_BYTES + " to " + MAX_SUPER_BLOCK_BYTES + ", got " + superBlockBytes);
      }
      if (capacityBytes < 4 * superBlockBytes && sizedForMaxBlock) {
        throw new IllegalArgumentException("capacityBytes must be at least 4 super-blocks, and a"
            + " super-block must hold the largest block (maxBlockBytes " + maxBlockBytes + "): "
            + "raise capacityBytes to at least " + 4 * superBlockBytes + " or lower maxBlockBytes,"
            + " got capacityBytes " + capacityBytes);
      }
      if (capacityBytes < 4 * superBlockBytes) {
        throw new IllegalArgumentException("capacityBytes must be at least 4 super-blocks ("
            + 4 * superBlockBytes + " bytes with super-blocks of " + superBlockBytes + "), got "
            + capacityBytes);
      }
      long largest = largestBlockBytes();
      if (maxBlockBytes < 0) {
        maxBlockBytes = (int) Math.min(DEFAULT_MAX_BLOCK_BYTES, largest);
      }
      if (maxBlockBytes < 1 || maxBlockBytes > largest) {
        throw new IllegalArgumentException("maxBlockBytes must be 1 to " + largest
            + " (what fits in a super-block of " + superBlockBytes + " bytes), got " + maxBlockBytes);
      }
      if (syncIntervalMillis < 1) {
        throw new IllegalArgumentException("syncIntervalMillis must be at least 1, got "
            + syncIntervalMillis);
      }
      if (minFreeBytes < -1) {
        throw new IllegalArgumentException("minFreeBytes must be -1 (the default) or more, got "
            + minFreeBytes);
      }
      if (scrubBytesPerSecond < 0) {
        throw new IllegalArgumentException("scrubBytesPerSecond must be 0 (no scrub) or positive,"
            + " got " + scrubBytesPerSecond);
      }
      if (reclaimBytesPerSecond < 1) {
        throw new IllegalArgumentException("reclaimBytesPerSecond must be positive, got "
            + reclaimBytesPerSecond);
      }
      if (checkpointJournalBytes < 64 << 10) {
        throw new IllegalArgumentException("checkpointJournalBytes must be at least 65536, got "
            + checkpointJournalBytes);
      }
      checkQuotas();
      return new DiskTierConfig(this);
    }

    /** Each quota holds 4 super-blocks, and the quotas leave 4 in the capacity. */
    private void checkQuotas() {
      long total = 0;
      for (Map.Entry<Namespace, Long> q : quotas.entrySet()) {
        if (q.getValue() < 4 * superBlockBytes) {
          throw new IllegalArgumentException("the disk quota of " + q.getKey() + " must be at least"
              + " 4 super-blocks (" + 4 * superBlockBytes + " bytes: its super-blocks are "
              + superBlockBytes + " bytes), got " + q.getValue());
        }
        total += q.getValue();
      }
      if (!quotas.isEmpty() && capacityBytes - total < 4 * superBlockBytes) {
        throw new IllegalArgumentException("the disk quotas take " + total + " of the "
            + capacityBytes + " bytes of capacityBytes: they must leave 4 super-blocks ("
            + 4 * superBlockBytes + " bytes) to the namespaces without a quota");
      }
    }

    /**
     * The smallest super-block, a whole number of pages, that holds a block of {@code blockBytes};
     * past the largest super-block, the largest (which the checks then refuse).
     */
    private long smallestSuperBlockFor(int blockBytes) {
      long bytes = 2L * RecordLayout.PAGE
          + (codec != null ? codec.maxEncodedLength(blockBytes) : blockBytes);
      superBlockBytes = Math.min(MAX_SUPER_BLOCK_BYTES,
          (bytes + RecordLayout.PAGE - 1) / RecordLayout.PAGE * RecordLayout.PAGE);
      while (largestBlockBytes() < blockBytes && superBlockBytes < MAX_SUPER_BLOCK_BYTES) {
        superBlockBytes += RecordLayout.PAGE; // the codec's headers grow with the room
      }
      return superBlockBytes;
    }

    /** The largest block whose record, encoded or not, fits in a super-block after its header page. */
    private long largestBlockBytes() {
      long room = superBlockBytes - 2L * RecordLayout.PAGE;
      if (codec != null) {
        room -= codec.maxEncodedLength(room) - room; // the container's headers
      }
      return Math.min(room, Integer.MAX_VALUE);
    }
  }
}
