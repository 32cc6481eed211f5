package dev.kvcache.server.events;

import dev.kvcache.BlockKey;
import dev.kvcache.spi.BlockTags;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells routers what the cache's tiers store and drop ({@link BlockListener}), as vLLM's KV events
 * of the engine blocks PUTs named ({@link EngineBlocks}): a block stored in a tier is {@code
 * BlockStored} in its medium, one that leaves a tier {@code BlockRemoved} from it, so that a move
 * down the stack is both. Mediums are those routers know: {@code CPU} for RAM, {@code STORAGE} for
 * the disk, {@code SHARED} (Dynamo's external tier) for the object store. Each event goes to the
 * topic {@code kv@<pool>@<model>} of its block's model. Blocks no PUT named are counted, not told.
 *
 * <p>Tiers that keep tags keep each named block's name with it ({@link EngineBlock#tag}): when the
 * server starts, each block such a tier holds with its name is told stored again in its medium,
 * and its later eviction is told as any other.
 */
public final class KvEventFeed implements BlockTags, AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(KvEventFeed.class);

  /** A tier's medium and its bit in {@link EngineBlocks}. */
  private record Medium(String name, int bit) {}

  private static final Map<String, Medium> MEDIUMS = Map.of(
      "ram", new Medium(KvEvent.CPU, 1),
      "disk", new Medium(KvEvent.STORAGE, 2),
      "s3", new Medium(KvEvent.SHARED, 4));

  private final EngineBlocks blocks;
  private final KvEventPublisher publisher;
  private final String topicPrefix;
  private final LongAdder unnamed = new LongAdder();

  /**
   * @param pool the {@code <pod>} of the topics
   */
  public KvEventFeed(EngineBlocks blocks, KvEventPublisher publisher, String pool) {
    this.blocks = blocks;
    this.publisher = publisher;
    this.topicPrefix = "kv@" + pool + "@";
  }

  @Override
  public void stored(String tier, BlockKey key) {
    Medium medium = MEDIUMS.get(tier);
    EngineBlock block = medium == null ? null : blocks.stored(key, medium.bit());
    if (block == null) {
      unnamed.increment();
      return;
    }
    publisher.offer(topicPrefix + block.model(), block.stored(medium.name()));
  }

  @Override
  public void removed(String tier, BlockKey key) {
    Medium medium = MEDIUMS.get(tier);
    EngineBlock block = medium == null ? null : blocks.removed(key, medium.bit());
    if (block != null) {
      publisher.offer(topicPrefix + block.model(), block.removed(medium.name()));
    }
  }

  @Override
  public byte[] tagOf(BlockKey key) {
    return blocks.tagOf(key);
  }

  @Override
  public void found(String tier, BlockKey key, byte[] tag) {
    Medium medium = MEDIUMS.get(tier);
    EngineBlock.Kept kept = EngineBlock.fromTag(tag);
    if (medium == null || kept == null) {
      unnamed.increment();
      return;
    }
    EngineBlock block = blocks.restore(key, kept, medium.bit());
    if (block != null) {
      publisher.offer(topicPrefix + block.model(), block.stored(medium.name()));
    }
  }

  @Override
  public void foundAll(String tier) {
    log.info("the {} tier told the engine blocks it kept; {} engine blocks known", tier,
        blocks.size());
  }

  /** Blocks stored that no PUT named (put without headers, or kept unnamed by a tier). */
  public long unnamed() {
    return unnamed.sum();
  }

  /** The publisher. */
  public KvEventPublisher publisher() {
    return publisher;
  }

  @Override
  public void close() {
    publisher.close();
  }
}
