package dev.kvcache.disk;

import static dev.kvcache.disk.internal.RecordLayout.PAGE;
import static dev.kvcache.disk.internal.RecordLayout.alignUp;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import dev.kvcache.disk.internal.SuperBlock;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * The disk tier's streams of super-blocks, one per namespace with a disk quota ({@link
 * DiskTierConfig#quotas()}) and one the namespaces without a quota share: which stream a record
 * goes to, the super-block each one appends to, the bytes each takes, and which super-block to
 * drop when one needs room.
 *
 * <p>A quota's super-blocks carry its namespace's tag in their file header ({@link
 * SuperBlock#owner()}); the shared ones carry 0, as files written before quotas do, and so do
 * the files of a namespace whose quota was taken away since. A stream whose next super-block would
 * pass its quota drops its own oldest. A stream that needs room under the capacity takes it from
 * the shared stream's oldest: the shared stream borrows what the quotas leave unused, and gives it
 * back when a quota's namespace needs it. It never takes a quota's super-block, unless that
 * quota's stream is over its quota (lowered since it was written), nor the shared stream's
 * while it holds no more than the quotas leave it.
 */
final class Streams {

  /** The shared stream's owner. */
  static final long SHARED = 0;

  /** The disk quotas by their namespaces' tags. */
  private final Map<Long, Long> quotas = new HashMap<>();
  /** The bytes of the capacity the quotas leave the shared stream. */
  private final long sharedShare;
  /** The super-block each stream reserves records in, by owner; null while it has none. */
  private final Map<Long, SuperBlock> actives = new ConcurrentHashMap<>();
  /** The tier's live super-blocks by id, oldest first. */
  private final ConcurrentSkipListMap<Integer, SuperBlock> superBlocks;

  Streams(DiskTierConfig config, ConcurrentSkipListMap<Integer, SuperBlock> superBlocks) {
    this.superBlocks = superBlocks;
    for (Map.Entry<Namespace, Long> q : config.quotas().entrySet()) {
      quotas.put(q.getKey().tag(), q.getValue());
    }
    this.sharedShare = config.capacityBytes()
        - quotas.values().stream().mapToLong(Long::longValue).sum();
  }

  /**
   * The stream of the namespace whose tag is {@code namespaceTag}: its own if it has a quota, else
   * the shared one.
   */
  long of(long namespaceTag) {
    return quotas.containsKey(namespaceTag) ? namespaceTag : SHARED;
  }

  /** The stream of a key's namespace; the shared one if the key has none. */
  long of(BlockKey key) {
    return key.namespace().map(ns -> of(ns.tag())).orElse(SHARED);
  }

  /** The super-block {@code stream} reserves records in; null if it has none. */
  SuperBlock active(long stream) {
    return actives.get(stream);
  }

  /** Makes {@code sb} the super-block {@code stream} reserves records in. */
  void activate(long stream, SuperBlock sb) {
    actives.put(stream, sb);
  }

  /** Takes away {@code stream}'s active super-block, to seal it; null if it had none. */
  SuperBlock deactivate(long stream) {
    return actives.remove(stream);
  }

  /** The active super-blocks of every stream. */
  Collection<SuperBlock> actives() {
    return actives.values();
  }

  /** Whether {@code sb} is the super-block its stream reserves records in. */
  boolean isActive(SuperBlock sb) {
    return actives.get(of(sb.owner())) == sb;
  }

  /** The quota of {@code stream}; -1 for the shared one. */
  long quota(long stream) {
    return stream == SHARED ? -1 : quotas.get(stream);
  }

  /** Whether a new super-block of {@code size} in {@code stream} would pass its quota. */
  boolean overQuota(long stream, long size) {
    return stream != SHARED && bytes(stream) + size > quotas.get(stream);
  }

  /**
   * Which super-block to drop so that {@code stream} can start one of {@code size}: past its
   * quota, its own oldest; otherwise (for room under the capacity or above the free-space floor)
   * the shared stream's oldest (for a quota's stream, only while the shared one holds more than
   * the quotas leave it: what it borrowed), then the oldest of a quota's stream that is over its
   * quota, and last, for a quota's stream, its own oldest; null if there is none such. A quota's
   * stream short of room for another reason (dropped super-blocks whose files readers still hold,
   * the metadata, a file system filled by others) recycles its own, never the others' blocks.
   */
  SuperBlock victimFor(long stream, long size) {
    if (overQuota(stream, size)) {
      return oldestOf(stream);
    }
    SuperBlock shared = oldestOf(SHARED);
    if (shared != null && (stream == SHARED || bytes(SHARED) > sharedShare)) {
      return shared; // its own, or what it borrowed of the quotas' room
    }
    SuperBlock over = oldestOverQuota();
    return over != null || stream == SHARED ? over : oldestOf(stream);
  }

  /**
   * The super-block background reclamation should free next: the oldest of a quota's stream
   * whose next super-block of {@code size} would pass its quota (so that a quota holds all but
   * its last super-block of blocks, where the capacity keeps two free ahead of the writers);
   * else, if the files take more than the {@code capacity} less two super-blocks ({@code used},
   * without dropped super-blocks that readers still hold),
   * the shared stream's oldest if the files beside the quotas' take more than the quotas leave
   * less two super-blocks, or a quota's stream's over its quota; null if no stream is that close
   * to its limit.
   */
  SuperBlock pressed(long used, long capacity, long size) {
    for (Map.Entry<Long, Long> q : quotas.entrySet()) {
      if (bytes(q.getKey()) + size > q.getValue()) {
        SuperBlock oldest = oldestOf(q.getKey());
        if (oldest != null) {
          return oldest;
        }
      }
    }
    if (used <= capacity - 2 * size) {
      return null;
    }
    long quoted = 0;
    for (Long q : quotas.keySet()) {
      quoted += bytes(q);
    }
    SuperBlock shared = oldestOf(SHARED);
    return shared != null && used - quoted > sharedShare - 2 * size ? shared : oldestOverQuota();
  }

  /** The oldest sealed super-block of {@code stream}; null if it has none. */
  private SuperBlock oldestOf(long stream) {
    for (SuperBlock sb : superBlocks.values()) {
      if (of(sb.owner()) == stream && !isActive(sb)) {
        return sb;
      }
    }
    return null;
  }

  /** The oldest sealed super-block of a quota's stream that is over its quota; null if none. */
  private SuperBlock oldestOverQuota() {
    for (Map.Entry<Long, Long> q : quotas.entrySet()) {
      if (bytes(q.getKey()) > q.getValue()) {
        SuperBlock oldest = oldestOf(q.getKey());
        if (oldest != null) {
          return oldest;
        }
      }
    }
    return null;
  }

  /**
   * Bytes the live super-blocks of {@code stream} take (an active one whole): what counts against
   * its quota.
   */
  long bytes(long stream) {
    long used = 0;
    for (SuperBlock sb : superBlocks.values()) {
      if (of(sb.owner()) == stream) {
        used += isActive(sb) ? sb.sizeBytes() : alignUp(sb.end(), PAGE);
      }
    }
    return used;
  }
}
