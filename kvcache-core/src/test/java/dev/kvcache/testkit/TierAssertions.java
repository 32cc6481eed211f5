package dev.kvcache.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.spi.Tier;
import java.nio.ByteBuffer;

/** What a test checks a tier holds: blocks of {@link Payloads}, read back both ways. */
public final class TierAssertions {

  private TierAssertions() {}

  /**
   * Asserts that {@code tier} holds version {@code version} of the block of {@code key}, exactly,
   * read into a buffer of {@code bufferBytes} and through a lease.
   */
  public static void assertHolds(Tier tier, BlockKey key, long version, int bufferBytes) {
    ByteBuffer dst = ByteBuffer.allocateDirect(bufferBytes);
    assertThat(tier.getInto(key, dst)).as("%s", key).isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(key, dst.flip())).as("%s read into a buffer", key)
        .isEqualTo(version);
    try (BlockLease lease = tier.get(key)) {
      assertThat(lease.status()).as("%s", key).isEqualTo(GetStatus.HIT);
      assertThat(Payloads.verify(key, lease.bytes())).as("%s read through a lease", key)
          .isEqualTo(version);
    }
  }

  /**
   * Asserts that {@code tier} holds version {@code version} of the blocks of {@link
   * Payloads#key} {@code from} to {@code to - 1}, each at most {@code bufferBytes} long.
   */
  public static void assertHolds(Tier tier, int from, int to, long version, int bufferBytes) {
    for (int i = from; i < to; i++) {
      assertHolds(tier, Payloads.key(i), version, bufferBytes);
    }
  }
}
