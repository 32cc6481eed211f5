package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.Namespace;
import dev.kvcache.PrefixKeys;
import dev.kvcache.PrefixPin;
import dev.kvcache.testkit.ReadmeSnippets;
import dev.kvcache.tiered.KvCacheBuilder;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The README's RAM-over-disk example, compiled and run here so it cannot rot. */
class ReadmeTieredExampleTest {

  private static final int BLOCK_BYTES = 256 << 10;

  @TempDir Path dir;
  private final PrefixKeys prefix = PrefixKeys.of(Namespace.of("llama-3.1-8b", "bf16", "tp0of1"), 16);
  private final List<ByteBuffer> staging = new ArrayList<>();
  private final List<GetStatus> loads = new ArrayList<>();

  @Test
  void theExampleLoadsWhatTheFirstRequestStored() throws IOException {
    int[] tokenIds = new int[16 * 8];
    for (int i = 0; i < tokenIds.length; i++) {
      tokenIds[i] = 7 * i;
      if (i % 16 == 0) {
        staging.add(ByteBuffer.allocateDirect(BLOCK_BYTES));
      }
    }
    assertThat(example(tokenIds)).as("first request: nothing cached").isZero();
    assertThat(example(tokenIds)).as("second request: every block").isEqualTo(8);
    assertThat(loads).hasSize(8).containsOnly(GetStatus.HIT);
    for (int i = 0; i < 8; i++) {
      assertThat(staging.get(i).flip().get(0)).isEqualTo((byte) i);
    }
  }

  @Test
  void theReadmeShowsThisCode() throws IOException {
    ReadmeSnippets.assertReadmeShows("tiered-example", Path.of("src/test/java/dev/kvcache/disk/ReadmeTieredExampleTest.java"));
  }

  private int example(int[] tokenIds) throws IOException {
    // README:start
    DiskTier disk = DiskTier.open(DiskTierConfig.builder(dir, 1L << 30)     // 1 GiB on disk
        .syncPolicy(SyncPolicy.PERIODIC).build());
    try (KvCache cache = KvCacheBuilder.newBuilder().ramBytes(64L << 20).lowerTier(disk).build()) {
      List<BlockKey> keys = prefix.keysFor(tokenIds);
      try (PrefixPin pin = cache.pinPrefix(keys, Duration.ofSeconds(5))) { // held until loaded
        for (int i = 0; i < pin.blocks(); i++) {
          load(pin.getInto(i, staging.get(i)));                           // from RAM or disk
        }
        for (int i = pin.blocks(); i < keys.size(); i++) {
          cache.put(keys.get(i), kvBlock(i));                             // RAM, spilled to disk
        }
        return pin.blocks();
      }
    }
    // README:end
  }

  private void load(GetStatus status) {
    loads.add(status);
  }

  private static ByteBuffer kvBlock(int i) {
    ByteBuffer b = ByteBuffer.allocateDirect(BLOCK_BYTES);
    while (b.hasRemaining()) {
      b.put((byte) i);
    }
    return b.flip();
  }
}
