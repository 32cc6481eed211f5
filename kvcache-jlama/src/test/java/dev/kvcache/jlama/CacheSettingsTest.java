package dev.kvcache.jlama;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.KvCache;
import dev.kvcache.client.RemoteTier;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The settings are read from system properties, else environment variables, and checked. */
class CacheSettingsTest {

  @Test
  void aPropertyWinsOverItsVariable() {
    Map<String, String> properties = Map.of("kvcache.ram-bytes", "64MiB");
    Map<String, String> environment = Map.of("KVCACHE_RAM_BYTES", "1GiB",
        "KVCACHE_BLOCK_TOKENS", "48");
    assertThat(CacheSettings.setting("kvcache.ram-bytes", properties::get, environment::get))
        .isEqualTo("64MiB");
    assertThat(CacheSettings.setting("kvcache.block-tokens", properties::get, environment::get))
        .isEqualTo("48");
    assertThat(CacheSettings.setting("kvcache.server", properties::get, environment::get))
        .isNull();
  }

  @Test
  void sizesTakeTheirUnits() {
    assertThat(CacheSettings.bytes("512KiB", 0)).isEqualTo(512L << 10);
    assertThat(CacheSettings.bytes("2 GiB", 0)).isEqualTo(2L << 30);
    assertThat(CacheSettings.bytes("4096", 0)).isEqualTo(4096);
    assertThat(CacheSettings.bytes(null, 7)).isEqualTo(7);
  }

  @Test
  void theCacheIsEmbeddedUnlessAServerIsNamed() {
    try (KvCache embedded = CacheSettings.open(Map.of("kvcache.ram-bytes", "16MiB")::get)) {
      assertThat(embedded).isNotInstanceOf(RemoteTier.class);
    }
    try (KvCache remote = CacheSettings.open(Map.of("kvcache.server", "127.0.0.1:1",
        "kvcache.namespace", "chat")::get)) {
      assertThat(remote).isInstanceOf(RemoteTier.class);
    }
    assertThatThrownBy(() -> CacheSettings.open(Map.of("kvcache.server", "nohost")::get))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("host:port");
  }
}
