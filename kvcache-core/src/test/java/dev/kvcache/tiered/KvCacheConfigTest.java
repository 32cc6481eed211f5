package dev.kvcache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.ram.RamPolicy;
import dev.kvcache.ram.RamTier;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierSettings;
import dev.kvcache.tiered.Durability;
import dev.kvcache.tiered.KvCacheConfig;
import dev.kvcache.tiered.TieredCacheConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KvCacheConfigTest {

  @Test
  void ramOnlyFromSettingsWithUnits() throws IOException {
    KvCacheConfig config = KvCacheConfig.of(Map.of("ram.bytes", "16MiB", "ram.max-block-bytes", "1 MiB"));
    assertThat(config.ramBytes()).isEqualTo(16L << 20);
    assertThat(config.lower()).isEmpty();
    try (KvCache cache = config.open()) {
      assertThat(cache).isInstanceOf(RamTier.class);
      assertThat(((Tier) cache).capacityBytes()).isEqualTo(16L << 20);
      assertThat(((Tier) cache).maxBlockBytes()).isEqualTo(1 << 20);
    }
  }

  @Test
  void theRamPolicyIsLruUnlessChosen() throws IOException {
    try (KvCache cache = KvCacheConfig.of(Map.of("ram.bytes", "16MiB")).open()) {
      assertThat(((RamTier) cache).policy()).isEqualTo(RamPolicy.LRU);
    }
    KvCacheConfig config = KvCacheConfig.of(Map.of("ram.bytes", "16MiB", "ram.policy", "W_Tiny_LFU"));
    try (KvCache cache = config.open()) {
      assertThat(((RamTier) cache).policy()).isEqualTo(RamPolicy.W_TINY_LFU);
    }
    assertThatThrownBy(() -> KvCacheConfig.of(Map.of("ram.policy", "fifo")))
        .hasMessageContaining("ram.policy").hasMessageContaining("lru, w_tiny_lfu");
  }

  @Test
  void tieredSettingsReachTheTieredConfig() {
    KvCacheConfig config = KvCacheConfig.of(Map.of(
        "tiered.spill-queue-blocks", "16", "tiered.spill-queue-wait", "2s",
        "tiered.promote-on-lower-hit", "FALSE", "tiered.spill-on-close", "false",
        "tiered.spill-threads", "3"));
    assertThat(config.tiered().spillQueueBlocks()).isEqualTo(16);
    assertThat(config.tiered().spillQueueWait()).isEqualTo(Duration.ofSeconds(2));
    assertThat(config.tiered().promoteOnLowerHit()).isFalse();
    assertThat(config.tiered().spillOnClose()).isFalse();
    assertThat(config.tiered().spillThreads()).isEqualTo(3);
    assertThat(KvCacheConfig.of(Map.of()).tiered().spillThreads())
        .isEqualTo(TieredCacheConfig.DEFAULT_SPILL_THREADS);
  }

  @Test
  void badSettingsAreNamedWithTheFormExpected() {
    assertThatThrownBy(() -> KvCacheConfig.of(Map.of("ram.bytes", "lots")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("setting 'ram.bytes' is 'lots', expected a size such as 512MiB or 8GiB");
    assertThatThrownBy(() -> KvCacheConfig.of(Map.of("tiered.spill-queue-wait", "5")))
        .hasMessageContaining("expected a duration such as 200ms");
    assertThatThrownBy(() -> KvCacheConfig.of(Map.of("tiered.spill-threads", "0")))
        .hasMessage("setting 'tiered.spill-threads' is '0', expected 1 to 64");
    assertThatThrownBy(() -> KvCacheConfig.of(Map.of("tiered.spill-on-close", "yes")))
        .hasMessageContaining("expected true or false");
    assertThatThrownBy(() -> KvCacheConfig.of(Map.of("ram.byte", "1GiB", "rma.bytes", "1GiB")))
        .hasMessage("unknown settings ram.byte, rma.bytes");
    assertThatThrownBy(() -> KvCacheConfig.of(Map.of("disk.dir", "/tmp/x")))
        .as("a lower tier's settings without lower = disk")
        .hasMessage("unknown setting disk.dir");
    assertThatThrownBy(() -> KvCacheConfig.of(Map.of("tiered.durability", "sometimes")))
        .hasMessageContaining("tiered.durability").hasMessageContaining("write_through");
  }

  @Test
  void aLargestBlockRamCannotHoldNamesBothSettings() {
    assertThatThrownBy(() -> KvCacheConfig.of(Map.of("ram.bytes", "32MiB", "ram.max-block-bytes", "64MiB")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("settings 'ram.max-block-bytes' and 'ram.bytes': the largest block"
            + " (67108864 bytes) does not fit a RAM tier of 33554432 bytes")
        .hasMessageEndingWith("lower the largest block or raise the RAM budget");
    assertThatThrownBy(() -> KvCacheConfig.of(Map.of("ram.bytes", "1KiB")))
        .hasMessageStartingWith("setting 'ram.bytes': RAM tier capacity must be at least");
  }

  @Test
  void durabilityIsASetting() {
    assertThat(KvCacheConfig.of(Map.of()).tiered().durability()).isEqualTo(Durability.RAM_FIRST);
    assertThat(KvCacheConfig.of(Map.of("tiered.durability", "write_through")).tiered().durability())
        .isEqualTo(Durability.WRITE_THROUGH);
  }

  @Test
  void aLowerTierOfAKindNotOnTheClassPathIsAClearError() {
    KvCacheConfig config = KvCacheConfig.of(Map.of("ram.bytes", "4MiB", "lower", "tape"));
    assertThatThrownBy(config::open)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no tier of that kind is on the class path");
  }

  @Test
  void loadsAPropertiesFile(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("kvcache.properties");
    Files.writeString(file, "# RAM only\nram.bytes = 8MiB\n");
    assertThat(KvCacheConfig.load(file).ramBytes()).isEqualTo(8L << 20);
  }

  @Test
  void sizesTakeEveryUnitAndRefuseOverflow() {
    TierSettings s = TierSettings.of(Map.of("a", "3", "b", "2KiB", "c", "5gb", "d", "1TiB", "e", "99999999999TiB"));
    assertThat(s.bytes("a", 0)).isEqualTo(3);
    assertThat(s.bytes("b", 0)).isEqualTo(2048);
    assertThat(s.bytes("c", 0)).isEqualTo(5L << 30);
    assertThat(s.bytes("d", 0)).isEqualTo(1L << 40);
    assertThatThrownBy(() -> s.bytes("e", 0)).hasMessageContaining("below 8 EiB");
    TierSettings huge = TierSettings.of(Map.of("n", "99999999999999999999", "t", "99999999999999999999ms"));
    assertThatThrownBy(() -> huge.bytes("n", 0)).hasMessageContaining("expected a number below 2^63");
    assertThatThrownBy(() -> huge.duration("t", null)).hasMessageContaining("expected a number below 2^63");
    assertThat(s.bytes("absent", 7)).isEqualTo(7);
    assertThatThrownBy(() -> s.bytes("absent")).hasMessage("setting 'absent' is required");
  }
}
