package dev.kvcache.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.CacheStats;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.server.TestServer;
import dev.kvcache.spi.LoadRate;
import dev.kvcache.spi.Tier;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.testkit.TierContractTest;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The tier contract, through the client, against a RAM-only server of the test's capacity. */
@Tag("contract")
class RemoteTierContractTest extends TierContractTest {

  @Override
  protected Tier newTier(long capacityBytes, int maxBlockBytes) {
    TestServer server = TestServer.start(null, Map.of(
        "kvcache.cache.ram-bytes", capacityBytes + "B",
        "kvcache.cache.max-block-bytes", maxBlockBytes + "B"));
    RemoteTier remote = new RemoteTier(RemoteTierConfig.builder()
        .server("127.0.0.1", server.port())
        .maxBlockBytes(maxBlockBytes)
        .build());
    return new ServerAndClient(server, remote);
  }

  /** Remote tiers report no gauges: nothing to check after close beyond the leases. */
  @Override
  protected void assertNothingRetainedAfterClose(CacheStats stats) {}

  /** A remote pin holds its blocks under the server's leases. */
  @Override
  protected boolean pinsHoldLocalLeases() {
    return false;
  }

  /** The remote tier offers none (the default {@code tryWriter}): its writers go to a server. */
  @Override
  protected boolean offersWritersWithoutWaiting() {
    return false;
  }

  /** The server evicts, not the client: what the client sees is that early blocks are gone. */
  @Override
  @Test
  protected void usedBytesNeverExceedCapacity() {
    int blocks = (int) (3 * CAPACITY_BYTES / BLOCK);
    for (int i = 0; i < blocks; i++) {
      BlockKey key = Payloads.key(100 + i);
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK)))
          .isIn(PutStatus.STORED, PutStatus.NOT_ADMITTED);
    }
    long present = 0;
    for (int i = 0; i < blocks; i++) {
      present += tier.contains(Payloads.key(100 + i)) ? 1 : 0;
    }
    assertThat(present).isPositive().isLessThanOrEqualTo(CAPACITY_BYTES / BLOCK);
  }

  /** The client, closing its server when it closes. */
  private record ServerAndClient(TestServer server, RemoteTier remote) implements Tier {
    @Override
    public String name() {
      return remote.name();
    }

    @Override
    public long capacityBytes() {
      return remote.capacityBytes();
    }

    @Override
    public int maxBlockBytes() {
      return remote.maxBlockBytes();
    }

    @Override
    public PutStatus put(BlockKey key, ByteBuffer src) {
      return remote.put(key, src);
    }

    @Override
    public BlockLease get(BlockKey key) {
      return remote.get(key);
    }

    @Override
    public GetStatus getInto(BlockKey key, ByteBuffer dst) {
      return remote.getInto(key, dst);
    }

    @Override
    public boolean contains(BlockKey key) {
      return remote.contains(key);
    }

    @Override
    public boolean delete(BlockKey key) {
      return remote.delete(key);
    }

    @Override
    public int lookupPrefix(List<BlockKey> keys) {
      return remote.lookupPrefix(keys);
    }

    @Override
    public PrefixPin pinPrefix(List<BlockKey> keys, Duration timeout) {
      return remote.pinPrefix(keys, timeout);
    }

    @Override
    public LoadRate loadRate() {
      return remote.loadRate();
    }

    @Override
    public CacheStats stats() {
      return remote.stats();
    }

    @Override
    public void close() {
      try {
        remote.close();
      } finally {
        server.close();
      }
    }
  }
}
