package dev.kvcache.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.spi.BlockTags;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A {@link BlockTags} listener for tests: gives tiers the tags set with {@link #give}, and records
 * the tags they tell, as UTF-8 text.
 */
public final class RecordingTags implements BlockTags {

  private final Map<BlockKey, byte[]> give = new ConcurrentHashMap<>();
  private final Map<BlockKey, String> found = new ConcurrentHashMap<>();
  private final List<String> told = new ArrayList<>();
  private final CountDownLatch all = new CountDownLatch(1);

  /** Gives block {@code key} the tag {@code tag} from now on (null: none). */
  public void give(BlockKey key, String tag) {
    give(key, tag == null ? null : tag.getBytes(StandardCharsets.UTF_8));
  }

  /** Gives block {@code key} the tag {@code tag}, as bytes, from now on (null: none). */
  public void give(BlockKey key, byte[] tag) {
    if (tag == null) {
      give.remove(key);
    } else {
      give.put(key, tag);
    }
  }

  /** Gives no block a tag from now on. */
  public void giveNone() {
    give.clear();
  }

  @Override
  public byte[] tagOf(BlockKey key) {
    return give.get(key);
  }

  @Override
  public synchronized void found(String tier, BlockKey key, byte[] tag) {
    String text = new String(tag, StandardCharsets.UTF_8);
    found.put(key, text);
    told.add(tier + " " + key.toHex() + " " + text);
  }

  @Override
  public void foundAll(String tier) {
    all.countDown();
  }

  @Override
  public void stored(String tier, BlockKey key) {}

  @Override
  public void removed(String tier, BlockKey key) {}

  /** The last tag told of each block. */
  public Map<BlockKey, String> found() {
    return Map.copyOf(found);
  }

  /** Every tag told, in order, as {@code <tier> <key in hex> <tag>}. */
  public synchronized List<String> told() {
    return List.copyOf(told);
  }

  /** The tags told, once a tier has told all it held ({@link #foundAll}; 30 s at most). */
  public Map<BlockKey, String> awaitAll() throws InterruptedException {
    assertThat(all.await(30, TimeUnit.SECONDS)).as("the tier told every tag").isTrue();
    return found();
  }
}
