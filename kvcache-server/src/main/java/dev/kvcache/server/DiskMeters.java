package dev.kvcache.server;

import dev.kvcache.KvCache;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.spi.Tier;
import dev.kvcache.tiered.StackedTier;
import dev.kvcache.tiered.TieredCache;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import jakarta.inject.Singleton;
import java.util.Optional;

/**
 * The disk tier's background scrub as Prometheus metrics ({@code kvcache_scrub_*}), when the
 * cache has a disk tier: what it has checked, the damaged blocks it found (and dropped) before a
 * read met them, and its passes over the whole tier; the bytes of blocks the tier read past the
 * page cache ({@code kvcache_disk_direct_read_bytes_total}); and the free space of its file system
 * beside the floor it keeps ({@code kvcache_disk_fs_free_bytes}, {@code
 * kvcache_disk_min_free_bytes}).
 */
@Singleton
class DiskMeters implements MeterBinder {

  private final KvCache cache;

  DiskMeters(KvCache cache) {
    this.cache = cache;
  }

  /** The cache's disk tier: its lower tier, or the upper one of a stack below RAM. */
  static Optional<DiskTier> diskTier(KvCache cache) {
    if (!(cache instanceof TieredCache tiered)) {
      return Optional.empty();
    }
    Tier lower = tiered.lower();
    Tier top = lower instanceof StackedTier s ? s.upper() : lower;
    return top instanceof DiskTier disk ? Optional.of(disk) : Optional.empty();
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    diskTier(cache).ifPresent(disk -> {
      FunctionCounter.builder("kvcache.scrub.bytes", disk, d -> d.diskStats().scrubbedBytes())
          .description("bytes of block records the disk tier's background scrub checked against"
              + " their checksums")
          .baseUnit("bytes").register(registry);
      FunctionCounter.builder("kvcache.scrub.damaged", disk, d -> d.diskStats().scrubDamaged())
          .description("damaged blocks the scrub found, and dropped, before a read met them")
          .register(registry);
      FunctionCounter.builder("kvcache.scrub.passes", disk, d -> d.diskStats().scrubPasses())
          .description("passes of the scrub over every super-block of the disk tier")
          .register(registry);
      FunctionCounter.builder("kvcache.disk.direct.read", disk,
              d -> d.diskStats().directReadBytes())
          .description("bytes of blocks the disk tier read past the page cache: reads of blocks"
              + " that were not in it")
          .baseUnit("bytes").register(registry);
      Gauge.builder("kvcache.disk.fs.free", disk, DiskTier::fileSystemFreeBytes)
          .description("bytes free on the disk tier's file system; below kvcache_disk_min_free_bytes"
              + " the tier starts no super-block and refuses puts")
          .baseUnit("bytes").register(registry);
      Gauge.builder("kvcache.disk.min.free", disk, DiskTier::minFreeBytes)
          .description("the free space the disk tier leaves on its file system (min-free)")
          .baseUnit("bytes").register(registry);
    });
  }
}
