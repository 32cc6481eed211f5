package dev.kvcache.bench.trace;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.Namespace;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link KvCache} driven through its public API as an engine drives it: {@code lookupPrefix}
 * over the request's keys, {@code getInto} of each block found, {@code put} of the others. Each
 * block is one allocation granule of synthetic payload that names its id, so every load is also
 * checked to return the right block.
 */
final class KvCacheModel implements PrefixCacheModel {

  /** Payload bytes per block: one 4 KiB granule of the RAM tier, so capacity counts blocks. */
  static final int BLOCK_BYTES = 4096;

  private final KvCache cache;
  private final ByteBuffer src;
  private final ByteBuffer dst;
  private final List<BlockKey> keys = new ArrayList<>();
  private final boolean missAfterLookupAllowed;
  private final Namespace namespace;

  KvCacheModel(KvCache cache) {
    this(cache, BLOCK_BYTES, false);
  }

  KvCacheModel(KvCache cache, int blockBytes, boolean missAfterLookupAllowed) {
    this(cache, blockBytes, missAfterLookupAllowed, null);
  }

  /**
   * A model whose blocks are {@code blockBytes} long (at least 8). With {@code
   * missAfterLookupAllowed}, a block the lookup counted that is gone when loaded (a cache whose
   * background threads drop blocks, such as a tiered cache whose spill failed) ends the request's
   * hits there, as an engine would recompute from it; otherwise it is an error. Its keys are in
   * {@code namespace} ({@link #key(Namespace, int)}), or in none if null.
   */
  KvCacheModel(KvCache cache, int blockBytes, boolean missAfterLookupAllowed,
      Namespace namespace) {
    this.namespace = namespace;
    this.cache = cache;
    this.src = ByteBuffer.allocateDirect(blockBytes);
    this.dst = ByteBuffer.allocateDirect(blockBytes);
    this.missAfterLookupAllowed = missAfterLookupAllowed;
  }

  /** RAM budget that holds {@code blocks} blocks of {@link #BLOCK_BYTES} beside the tier's headroom. */
  static long ramBytesFor(long blocks) {
    return (blocks + 1) * BLOCK_BYTES;
  }

  static BlockKey key(int id) {
    return BlockKey.of(0x6b76_6361_6368_6531L, id * 0x9E37_79B9_7F4A_7C15L);
  }

  /** Block {@code id}'s key in {@code namespace} (or in none, if null). */
  static BlockKey key(Namespace namespace, int id) {
    BlockKey key = key(id);
    return namespace == null ? key
        : BlockKey.of(namespace, key.hi() ^ namespace.tag(), key.lo());
  }

  @Override
  public int serve(int[] ids) {
    keys.clear();
    for (int id : ids) {
      keys.add(key(namespace, id));
    }
    int hits = cache.lookupPrefix(keys);
    for (int i = 0; i < hits; i++) {
      dst.clear();
      GetStatus status = cache.getInto(keys.get(i), dst);
      if (status == GetStatus.MISS && missAfterLookupAllowed) {
        hits = i;
        break;
      }
      if (status != GetStatus.HIT) {
        throw new IllegalStateException("block " + ids[i] + " found by lookup, then " + status);
      }
      if (dst.getLong(0) != ids[i]) {
        throw new IllegalStateException("block " + ids[i] + " read back as block " + dst.getLong(0));
      }
    }
    for (int i = hits; i < ids.length; i++) {
      src.clear().putLong(0, ids[i]);
      cache.put(keys.get(i), src);
    }
    return hits;
  }

  @Override
  public void close() {
    cache.close();
  }
}
