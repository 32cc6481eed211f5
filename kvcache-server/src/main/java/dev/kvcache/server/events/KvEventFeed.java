package dev.kvcache.server.events;

import dev.kvcache.BlockKey;
import dev.kvcache.spi.BlockListener;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * Tells routers what the cache's tiers store and drop ({@link BlockListener}), as vLLM's KV events
 * of the engine blocks PUTs named ({@link EngineBlocks}): a block stored in a tier is {@code
 * BlockStored} in its medium, one that leaves a tier {@code BlockRemoved} from it, so that a move
 * down the stack is both. Mediums are those routers know: {@code CPU} for RAM, {@code STORAGE} for
 * the disk, {@code SHARED} (Dynamo's external tier) for the object store. Each event goes to the
 * topic {@code kv@<pool>@<model>} of its block's model. Blocks no PUT named are counted, not told.
 */
public final class KvEventFeed implements BlockListener, AutoCloseable {

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

  /** Blocks stored that no PUT named (stored before the server started, or without headers). */
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
