package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.kvcache.KvCache;
import dev.kvcache.seal.MasterKeys;
import dev.kvcache.server.cache.CacheSettings;
import dev.kvcache.server.cache.NamespaceQuotas;
import dev.kvcache.server.cache.SealedNamespaces;
import dev.kvcache.tiered.Durability;
import dev.kvcache.tiered.KvCacheBuilder;
import dev.kvcache.tiered.KvCacheConfig;
import dev.kvcache.tiered.StackedTierConfig;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cache's configuration built from the server's settings: the values reach the cache, and
 * every error, whether the server, the core or a tier's factory finds it, names the setting as the
 * server's configuration spells it.
 */
class CacheSettingsTest {

  @TempDir
  Path dir;

  private CacheSettings settings(Consumer<CacheSettings> change) {
    CacheSettings s = new CacheSettings();
    s.setRamBytes("64MiB");
    s.setDiskDir(dir.resolve("disk").toString());
    s.setDiskCapacity("512MiB");
    s.setDiskMinFree("0B");
    change.accept(s);
    return s;
  }

  /** The error of building the configuration and opening the cache, which must fail. */
  private String error(Consumer<CacheSettings> change) {
    Throwable thrown = catchThrowable(() -> {
      try (KvCache cache = settings(change).toConfig().open()) {
        assertThat(cache).as("a cache opened where an error was expected").isNull();
      }
    });
    assertThat(thrown).isInstanceOf(IllegalArgumentException.class);
    return thrown.getMessage();
  }

  @Test
  void theServersValuesReachTheConfiguration() {
    KvCacheConfig config = settings(s -> {
      s.setRamBytes("64MiB");
      s.setMaxBlockBytes("4MiB");
      s.setDurability("write_through");
      s.setSpillThreads("3");
      s.setS3(Map.of("bucket", "kvc", "capacity", "1GiB", "upload", "evicted"));
    }).toConfig();
    assertThat(config.ramBytes()).isEqualTo(64L << 20);
    assertThat(config.maxBlockBytes()).isEqualTo(4 << 20);
    assertThat(config.tiered().durability()).isEqualTo(Durability.WRITE_THROUGH);
    assertThat(config.tiered().spillThreads()).isEqualTo(3);
    assertThat(config.lower()).containsExactly("disk", "s3");
    assertThat(config.stacked().upload()).isEqualTo(StackedTierConfig.Upload.EVICTED);

    dev.kvcache.Namespace team = dev.kvcache.Namespace.of("m", "bf16", "tp0of1", "team");
    KvCacheConfig quoted = settings(s -> s.setS3(Map.of("bucket", "kvc", "capacity", "1GiB")))
        .toConfig(new NamespaceQuotas(Map.of(team, 8L << 20), Map.of(team, 128L << 20),
            Map.of(team, 256L << 20)), SealedNamespaces.NONE);
    assertThat(quoted.ramQuotas()).containsEntry(team, 8L << 20);
    assertThat(quoted.quotas("disk")).containsEntry(team, 128L << 20);
    assertThat(quoted.quotas("s3")).containsEntry(team, 256L << 20);
    assertThatThrownBy(() -> settings(s -> { }).toConfig(new NamespaceQuotas(Map.of(), Map.of(),
        Map.of(team, 1L << 20)), SealedNamespaces.NONE))
        .hasMessageContaining("settings 'kvcache.quotas.*.object-bytes' need an object tier");
    SealedNamespaces sealed = new SealedNamespaces(
        MasterKeys.parse("1:" + Base64.getEncoder().encodeToString(new byte[32])), Set.of(team));
    assertThat(settings(s -> { }).toConfig(NamespaceQuotas.NONE, sealed).sealed())
        .containsExactly(team);
    assertThatThrownBy(() -> settings(s -> s.setDiskDir("")).toConfig(NamespaceQuotas.NONE,
        sealed)).hasMessageContaining("'kvcache.sealing.namespaces' need a tier below RAM");

    KvCacheConfig ramOnly = settings(s -> s.setDiskDir("")).toConfig();
    assertThat(ramOnly.lower()).isEmpty();
    KvCacheConfig emptyRam = settings(s -> s.setRamBytes("")).toConfig();
    assertThat(emptyRam.ramBytes()).as("an empty setting stands for the default")
        .isEqualTo(KvCacheBuilder.DEFAULT_RAM_BYTES);
  }

  @Test
  void everyErrorNamesTheServersSetting() {
    assertThat(error(s -> s.setRamBytes("lots")))
        .isEqualTo("setting 'kvcache.cache.ram-bytes' is 'lots', expected a size such as 512MiB"
            + " or 8GiB");
    assertThat(error(s -> {
      s.setRamBytes("32MiB");
      s.setMaxBlockBytes("64MiB");
    })).startsWith("settings 'kvcache.cache.max-block-bytes' and 'kvcache.cache.ram-bytes': the"
        + " largest block (67108864 bytes) does not fit a RAM tier of 33554432 bytes");
    assertThat(error(s -> s.setDurability("eventually")))
        .startsWith("setting 'kvcache.cache.durability' is 'eventually', expected one of");
    assertThat(error(s -> s.setRamSharedMemoryDir(dir.resolve("none").toString())))
        .startsWith("setting 'kvcache.cache.ram-shared-memory-dir': '");
    // found by the disk tier's factory when the cache opens
    assertThat(error(s -> s.setDiskCodecFilter("byte_shuffle_2")))
        .isEqualTo("setting 'kvcache.cache.disk-codec-filter' needs 'kvcache.cache.disk-codec'"
            + " = lz4");
    assertThat(error(s -> s.setDiskCapacity("200MiB")))
        .contains("setting 'kvcache.cache.disk-capacity' must be at least 4 super-blocks");
    // found by the object tier's factory when the cache opens
    assertThat(error(s -> s.setS3(Map.of("bucket", "kvc", "capacity", "1GiB",
        "fleet-self", "a:1"))))
        .startsWith("setting 'kvcache.cache.s3.fleet-self' names this server in a fleet: set"
            + " 'kvcache.cache.s3.fleet' or 'kvcache.cache.s3.fleet-dns'");
    assertThat(error(s -> s.setS3(Map.of("bucket", "b", "capacity", "1GiB"))))
        .startsWith("setting 'kvcache.cache.s3.bucket': 'b' is not an S3 bucket name");
    assertThat(error(s -> s.setS3(Map.of("bucket", "kvc", "capacity", "1GiB", "connect-timeout",
        "0s")))).startsWith("setting 'kvcache.cache.s3.connect-timeout': ");
    assertThat(error(s -> s.setS3(Map.of("bucket", "kvc", "capacity", "1KiB"))))
        .startsWith("setting 'kvcache.cache.s3.capacity': the largest block");
    assertThat(error(s -> s.setS3(Map.of("bucket", "kvc"))))
        .isEqualTo("setting 'kvcache.cache.s3.capacity' is required");
    assertThat(error(s -> s.setS3(Map.of("bucket", "kvc", "capacity", "1GiB", "upload-threads",
        "0")))).isEqualTo("setting 'kvcache.cache.s3.upload-threads' is '0', expected 1 to 256");
    assertThat(error(s -> {
      s.setDiskDir("");
      s.setS3(Map.of("bucket", "kvc", "capacity", "1GiB", "upload", "evicted"));
    })).as("which blocks the disk uploads, with no disk").isEqualTo(
        "unknown setting kvcache.cache.s3.upload");
  }
}
