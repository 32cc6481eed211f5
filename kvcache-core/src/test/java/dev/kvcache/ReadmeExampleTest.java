package dev.kvcache;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.testkit.ReadmeSnippets;
import dev.kvcache.tiered.KvCacheBuilder;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The README's embedding example, compiled and run here so it cannot rot. */
class ReadmeExampleTest {

  private static final int BLOCK_BYTES = 256 << 10;
  private final List<PutStatus> putStatuses = new ArrayList<>();

  @Test
  void theExampleRunsAndFindsItsBlocks() {
    int[] tokenIds = new int[40];
    for (int i = 0; i < tokenIds.length; i++) {
      tokenIds[i] = 1000 + i;
    }
    GetStatus copied = example(tokenIds, BLOCK_BYTES);
    assertThat(putStatuses).containsExactly(PutStatus.STORED, PutStatus.STORED);
    assertThat(copied).isEqualTo(GetStatus.HIT);
  }

  @Test
  void theReadmeShowsThisCode() throws IOException {
    ReadmeSnippets.assertReadmeShows("example", Path.of("src/test/java/dev/kvcache/ReadmeExampleTest.java"));
  }

  private GetStatus example(int[] tokenIds, int blockBytes) {
    // README:start
    Namespace ns = Namespace.of("llama-3.1-8b", "bf16", "tp0of1");
    PrefixKeys prefix = PrefixKeys.of(ns, 16);                // 16 tokens per block
    try (KvCache cache = KvCacheBuilder.newBuilder().ramBytes(64L << 20).build()) {
      List<BlockKey> keys = prefix.keysFor(tokenIds);         // one key per full block
      int cached = cache.lookupPrefix(keys);                  // leading blocks already stored
      for (int i = cached; i < keys.size(); i++) {
        PutStatus put = cache.put(keys.get(i), kvBlock(i));   // after prefill: store new blocks
        log(put);                                             // STORED, REJECTED_TOO_LARGE, ...
      }
      try (BlockLease lease = cache.get(keys.get(0))) {       // zero-copy, read-only view
        if (lease.status() == GetStatus.HIT) {
          consume(lease.bytes());
        }
      }
      ByteBuffer dst = ByteBuffer.allocateDirect(blockBytes);
      return cache.getInto(keys.get(1), dst);                 // one copy into your buffer
    }
    // README:end
  }

  private ByteBuffer kvBlock(int i) {
    ByteBuffer b = ByteBuffer.allocateDirect(BLOCK_BYTES);
    while (b.hasRemaining()) {
      b.put((byte) i);
    }
    return b.flip();
  }

  private void log(PutStatus status) {
    putStatuses.add(status);
  }

  private static void consume(ByteBuffer kv) {
    assertThat(kv.remaining()).isEqualTo(BLOCK_BYTES);
    assertThat(kv.get(0)).isZero();
  }
}
