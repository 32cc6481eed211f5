package dev.kvcache.disk;

import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.Filter;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierFactory;
import dev.kvcache.spi.TierPolicies;
import dev.kvcache.spi.TierSettings;
import java.io.IOException;
import java.nio.file.Path;

/**
 * Opens the disk tier for {@link dev.kvcache.tiered.KvCacheConfig} ({@code lower = disk}).
 * Settings, under {@code disk.}: {@code dir} (required), {@code capacity} (required), {@code super-block},
 * {@code sync-policy} ({@code none}, {@code periodic}, {@code always}), {@code sync-interval},
 * {@code min-free}, {@code reclaim-rate} and {@code scrub-rate} (bytes per second; a scrub rate
 * of 0 turns the scrub off), {@code direct-writes} ({@code false} writes block payloads through
 * the page cache), {@code direct-reads} ({@code false} reads blocks through the mapping even when
 * they are not in the page cache), {@code admission} ({@code always},
 * {@code seen_before}), {@code codec} ({@code none}, the default, stores blocks as they are;
 * {@code lz4} stores them with the {@link BlockCodec}), {@code codec-filter} (a {@link Filter},
 * such as {@code byte_shuffle_2} for bf16 tensors; {@code none} by default); defaults as in {@link
 * DiskTierConfig}. The largest block is the cache's.
 * Every setting with its default, and the name the server gives it: {@code docs/settings.md}.
 */
public final class DiskTierFactory implements TierFactory {

  @Override
  public String kind() {
    return "disk";
  }

  @Override
  public Tier open(TierSettings settings, int maxBlockBytes) throws IOException {
    return open(settings, maxBlockBytes, TierPolicies.NONE);
  }

  /**
   * Opens the tier with disk quotas ({@link DiskTierConfig.Builder#quota}) and sealed namespaces
   * ({@link DiskTierConfig.Builder#sealing}).
   */
  @Override
  public Tier open(TierSettings settings, int maxBlockBytes, TierPolicies policies)
      throws IOException {
    DiskTierConfig.Builder b = DiskTierConfig.builder(Path.of(settings.string("dir")),
        settings.bytes("capacity"));
    b.quotas(policies.quotas());
    if (!policies.sealed().isEmpty()) {
      b.sealing(policies.masterKeys(), policies.sealed());
    }
    if (settings.has("super-block")) {
      b.superBlockBytes(settings.bytes("super-block", 0));
    }
    b.maxBlockBytes(maxBlockBytes);
    b.syncPolicy(settings.choice("sync-policy", SyncPolicy.class, SyncPolicy.PERIODIC));
    if (settings.has("sync-interval")) {
      b.syncIntervalMillis(settings.duration("sync-interval", null).toMillis());
    }
    if (settings.has("min-free")) {
      b.minFreeBytes(settings.bytes("min-free", 0));
    }
    if (settings.has("reclaim-rate")) {
      b.reclaimBytesPerSecond(settings.bytes("reclaim-rate", 0));
    }
    if (settings.has("scrub-rate")) {
      b.scrubBytesPerSecond(settings.bytes("scrub-rate", 0));
    }
    b.directWrites(settings.bool("direct-writes", DiskTierConfig.DEFAULT_DIRECT_WRITES));
    b.directReads(settings.bool("direct-reads", DiskTierConfig.DEFAULT_DIRECT_READS));
    b.admission(settings.choice("admission", Admission.class, Admission.ALWAYS));
    Filter filter = settings.choice("codec-filter", Filter.class, Filter.NONE);
    if (settings.choice("codec", Codec.class, Codec.NONE) == Codec.LZ4) {
      b.codec(BlockCodec.builder().filter(filter).build());
    } else if (filter != Filter.NONE) {
      throw new IllegalArgumentException("setting '" + settings.name("codec-filter") + "' needs '"
          + settings.name("codec") + "' = lz4");
    }
    settings.requireAllRead();
    return DiskTier.open(built(b, settings));
  }

  /** The configuration, its error naming the settings where the builder names its fields. */
  private static DiskTierConfig built(DiskTierConfig.Builder b, TierSettings settings) {
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      String message = e.getMessage()
          .replace("capacityBytes", "setting '" + settings.name("capacity") + "'")
          .replace("superBlockBytes", "setting '" + settings.name("super-block") + "'")
          .replace("(maxBlockBytes ", "(")
          .replace("maxBlockBytes", "the largest block")
          .replace("syncIntervalMillis", "setting '" + settings.name("sync-interval") + "' (in ms)")
          .replace("minFreeBytes", "setting '" + settings.name("min-free") + "'")
          .replace("reclaimBytesPerSecond", "setting '" + settings.name("reclaim-rate") + "'")
          .replace("scrubBytesPerSecond", "setting '" + settings.name("scrub-rate") + "'");
      throw new IllegalArgumentException(message, e);
    }
  }


  /** What {@code disk.codec} names. */
  private enum Codec {
    NONE,
    LZ4
  }
}
