package dev.kvcache.server;

import dev.kvcache.BlockKey;
import dev.kvcache.server.events.KvEventFeed;
import dev.kvcache.spi.BlockTags;
import dev.kvcache.spi.Tier;
import io.micronaut.context.annotation.Context;
import jakarta.inject.Singleton;
import java.util.List;

/**
 * Hands the cache's tiers one listener (a tier takes one) that tells every part of the server
 * that follows what they hold: the KV events ({@link KvEventFeed}) and the S3 API's object names.
 * A tier asks each of them in turn for a block's tag, and keeps the first one given: the blocks
 * they name never share a key, and each reads back only the tags of its own format (their first
 * byte). Built at the start, so that the tiers tell what they already hold before requests come.
 */
@Context
@Singleton
final class TierListeners implements BlockTags {

  private final List<BlockTags> listeners;

  TierListeners(Tier cache, List<BlockTags> listeners) {
    this.listeners = List.copyOf(listeners);
    if (this.listeners.isEmpty()) {
      return;
    }
    if (!cache.listen(this)) {
      if (this.listeners.stream().anyMatch(KvEventFeed.class::isInstance)) {
        throw new IllegalStateException("the cache's tiers (" + cache.name() + ") tell no"
            + " listener what they store: kvcache.events cannot be told");
      }
    }
  }

  @Override
  public void stored(String tier, BlockKey key) {
    for (BlockTags l : listeners) {
      l.stored(tier, key);
    }
  }

  @Override
  public void removed(String tier, BlockKey key) {
    for (BlockTags l : listeners) {
      l.removed(tier, key);
    }
  }

  @Override
  public byte[] tagOf(BlockKey key) {
    for (BlockTags l : listeners) {
      byte[] tag = l.tagOf(key);
      if (tag != null && tag.length > 0) {
        return tag;
      }
    }
    return null;
  }

  @Override
  public void found(String tier, BlockKey key, byte[] tag) {
    for (BlockTags l : listeners) {
      l.found(tier, key, tag);
    }
  }

  @Override
  public void foundAll(String tier) {
    for (BlockTags l : listeners) {
      l.foundAll(tier);
    }
  }
}
