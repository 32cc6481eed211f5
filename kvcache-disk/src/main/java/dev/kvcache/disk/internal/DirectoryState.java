package dev.kvcache.disk.internal;

import static dev.kvcache.disk.internal.RecordLayout.KIND_TOMBSTONE;

import dev.kvcache.BlockKey;
import dev.kvcache.disk.device.StorageDevice;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A disk tier directory read back: its super-blocks, opened, and the index its checkpoint and
 * journals describe, or, when they are missing or damaged, the index its records describe. Used
 * by the tier when it opens and by the command-line tool.
 */
public final class DirectoryState {

  private static final Logger log = LoggerFactory.getLogger(DirectoryState.class);
  private static final Pattern SUPER_BLOCK_FILE = Pattern.compile("sb-([0-9a-f]{8})\\.kvsb");
  private static final Pattern JOURNAL_FILE = Pattern.compile("journal-([0-9a-f]{16})\\.kvj");

  /** Super-blocks by id, oldest first; those the journal says were dropped are not here. */
  public final TreeMap<Integer, SuperBlock> superBlocks = new TreeMap<>();
  /** Super-block files whose header is damaged: they hold nothing usable. */
  public final List<Path> damagedSuperBlocks = new ArrayList<>();
  /** Super-blocks whose drop was journalled but whose file survived (a crash in between). */
  public final List<SuperBlock> droppedSuperBlocks = new ArrayList<>();
  /** Journal files by generation, all read (or superseded by the checkpoint). */
  public final TreeMap<Long, Path> journals = new TreeMap<>();
  public final ConcurrentHashMap<BlockKey, Location> index = new ConcurrentHashMap<>();
  public long maxSequence;
  public int nextSuperBlockId = 1;
  public long nextGeneration = 1;
  /** Whether the index came from scanning the records rather than from the metadata. */
  public boolean rebuilt;
  /** Whether a valid checkpoint was loaded. */
  public boolean checkpointLoaded;
  /** Changes found in records newer than the metadata (see {@link #rollForward}). */
  public long rolledForward;
  /**
   * Puts in the journal whose record did not reach the device (a power loss after the entry was
   * written and before its record was forced): passed by, so their keys keep their earlier block.
   */
  public long unconfirmedLost;
  /**
   * Blocks left out of the index: entries whose super-block file is missing, damaged or cut short,
   * and the newest record of a key whose payload failed its checksum when a rebuild or a
   * roll-forward read it from the records.
   */
  public final List<LostBlock> lostBlocks = new ArrayList<>();

  /** Why an indexed block's record cannot be read at all. */
  public enum Loss {
    /** Its super-block file is gone. */
    MISSING,
    /** Its super-block file ends before the record does. */
    TRUNCATED,
    /** Its super-block file's header is damaged. */
    DAMAGED,
    /**
     * Its record, the newest of its key, fails its payload checksum: the index was built from the
     * records (a rebuild, or a roll-forward past the journal) and could not take it.
     */
    RECORD_DAMAGED
  }

  /** An index entry whose record cannot be read, and why. */
  public record LostBlock(BlockKey key, Location location, Loss loss) {}

  private final StorageDevice device;
  private final Path dir;
  private final boolean repair;

  private DirectoryState(StorageDevice device, Path dir, boolean repair) {
    this.device = device;
    this.dir = dir;
    this.repair = repair;
  }

  /**
   * Reads {@code dir}. With {@code repair}, a torn journal tail is cut off the file; without it,
   * nothing is written.
   *
   * @throws IOException if a file cannot be read, or a super-block has an unknown format version
   */
  public static DirectoryState load(StorageDevice device, Path dir, boolean repair)
      throws IOException {
    DirectoryState s = new DirectoryState(device, dir, repair);
    s.read(false);
    return s;
  }

  /** Reads {@code dir}'s super-blocks and builds the index from their records alone. */
  public static DirectoryState fromRecords(StorageDevice device, Path dir) throws IOException {
    DirectoryState s = new DirectoryState(device, dir, false);
    s.read(true);
    return s;
  }

  private void read(boolean fromRecords) throws IOException {
    TreeMap<Integer, Path> sbFiles = new TreeMap<>();
    for (String name : device.list(dir)) {
      Matcher m = SUPER_BLOCK_FILE.matcher(name);
      if (m.matches()) {
        sbFiles.put(Integer.parseUnsignedInt(m.group(1), 16), dir.resolve(name));
      }
      m = JOURNAL_FILE.matcher(name);
      if (m.matches()) {
        journals.put(Long.parseUnsignedLong(m.group(1), 16), dir.resolve(name));
      }
    }
    Set<Integer> damagedIds = new HashSet<>();
    for (Map.Entry<Integer, Path> f : sbFiles.entrySet()) {
      SuperBlock sb = SuperBlock.open(device, f.getValue(), f.getKey());
      if (sb == null) {
        damagedSuperBlocks.add(f.getValue());
        damagedIds.add(f.getKey());
        continue;
      }
      superBlocks.put(sb.id(), sb);
      nextSuperBlockId = Math.max(nextSuperBlockId, sb.id() + 1);
    }
    if (fromRecords || !replayMetadata()) {
      rebuildByScan();
      nextGeneration = journals.isEmpty() ? 1 : journals.lastKey() + 1;
    } else {
      rollForward();
    }
    // entries whose super-block is gone, damaged or cut short are not blocks any more
    int leftOut = lostBlocks.size();
    index.entrySet().removeIf(e -> {
      Location loc = e.getValue();
      SuperBlock sb = superBlocks.get(loc.superBlockId);
      Loss loss = sb != null
          ? ((long) loc.payloadOffset + loc.storedLength > sb.sizeBytes() ? Loss.TRUNCATED : null)
          : damagedIds.contains(loc.superBlockId) ? Loss.DAMAGED : Loss.MISSING;
      if (loss != null) {
        lostBlocks.add(new LostBlock(e.getKey(), loc, loss));
      }
      return loss != null;
    });
    if (lostBlocks.size() > leftOut) {
      log.warn("{}: {} indexed blocks are in super-block files that are missing, damaged or cut"
          + " short", dir, lostBlocks.size() - leftOut);
    }
  }

  /** Loads the checkpoint and replays the journals after it; false if a scan must do instead. */
  private boolean replayMetadata() throws IOException {
    Set<Integer> dropped = new HashSet<>();
    Checkpoint.Header cp = Checkpoint.read(device, dir, index::put);
    long first = cp != null ? cp.nextGeneration : 1;
    if (cp != null) {
      checkpointLoaded = true;
      maxSequence = cp.maxSequence;
    } else {
      index.clear();
      if (device.exists(dir.resolve(Checkpoint.FILE_NAME))) {
        log.warn("{}: the checkpoint is damaged", dir);
      }
      if (!superBlocks.isEmpty() && (journals.isEmpty() || journals.firstKey() != 1)) {
        log.warn("{}: no checkpoint and no complete journal: rebuilding the index from the super-blocks", dir);
        return false;
      }
    }
    long expected = first;
    for (Map.Entry<Long, Path> j : journals.tailMap(first).entrySet()) {
      if (j.getKey() != expected) {
        log.warn("{}: journal generation {} is missing: rebuilding the index from the super-blocks",
            dir, expected);
        index.clear();
        return false;
      }
      long n = Journal.replay(device, j.getValue(), j.getKey(), repair,
          (e, confirmed) -> apply(e, confirmed, dropped));
      if (n < 0) {
        log.warn("{}: damaged journal header: rebuilding the index from the super-blocks", j.getValue());
        index.clear();
        return false;
      }
      expected++;
    }
    index.values().removeIf(loc -> dropped.contains(loc.superBlockId));
    if (unconfirmedLost > 0) {
      log.warn("{}: {} puts in the journal lost their record to a crash before it reached the"
          + " device; their keys keep their earlier blocks", dir, unconfirmedLost);
    }
    for (int id : dropped) {
      SuperBlock sb = superBlocks.remove(id);
      if (sb != null) {
        droppedSuperBlocks.add(sb);
      }
    }
    nextGeneration = Math.max(expected, journals.isEmpty() ? first : journals.lastKey() + 1);
    return true;
  }

  private void apply(JournalEntry e, boolean confirmed, Set<Integer> dropped) {
    switch (e.type) {
      case JournalLayout.TYPE_PUT:
        nextSuperBlockId = Math.max(nextSuperBlockId, e.superBlockId + 1);
        if (dropped.contains(e.superBlockId)) {
          break; // written while its super-block was being dropped: never installed
        }
        if (!confirmed && !recordWhole(e.key, e.location)) {
          unconfirmedLost++; // the key keeps what the index held before this entry
          break;
        }
        // a block moved forward keeps its sequence: the later entry wins
        index.merge(e.key, e.location, (cur, nu) -> nu.sequence >= cur.sequence ? nu : cur);
        break;
      case JournalLayout.TYPE_DELETE:
        index.computeIfPresent(e.key, (k, cur) -> cur.sequence < e.sequence ? null : cur);
        break;
      case JournalLayout.TYPE_DROP:
        dropped.add(e.superBlockId);
        nextSuperBlockId = Math.max(nextSuperBlockId, e.superBlockId + 1);
        break;
      default:
        return; // a sync entry: what it says is used by the journal's reader
    }
    maxSequence = Math.max(maxSequence, e.sequence);
  }

  /** Whether the record of {@code key} at {@code loc} is whole (see {@link Records#whole}). */
  private boolean recordWhole(BlockKey key, Location loc) {
    SuperBlock sb = superBlocks.get(loc.superBlockId);
    return sb != null && Records.whole(sb, key, loc);
  }

  /**
   * Adds the records written after the last change the metadata describes: puts whose journal
   * entry a crash cut off, or a journal lost or damaged since the checkpoint. They are in the
   * newest super-blocks, which are scanned newest first until one holds nothing newer. After a
   * clean close there are none, and this reads the record headers of one super-block.
   */
  private void rollForward() {
    long described = maxSequence;
    Map<BlockKey, Long> tombstones = new HashMap<>();
    Map<BlockKey, Location> damaged = new HashMap<>();
    long[] added = {0};
    for (SuperBlock sb : superBlocks.descendingMap().values()) {
      boolean[] newer = {false};
      Records.scan(sb, sb.sizeBytes(), (kind, key, loc) -> {
        if (loc.sequence <= described) {
          return;
        }
        newer[0] = true;
        maxSequence = Math.max(maxSequence, loc.sequence);
        if (kind == KIND_TOMBSTONE) {
          tombstones.merge(key, loc.sequence, Math::max);
        } else if (Records.payloadIntact(sb, loc)) {
          index.merge(key, loc, (cur, nu) -> nu.sequence >= cur.sequence ? nu : cur);
          added[0]++;
        } else {
          damaged.merge(key, loc, (cur, nu) -> nu.sequence >= cur.sequence ? nu : cur);
        }
      });
      if (!newer[0]) {
        break;
      }
    }
    tombstones.forEach((key, seq) -> index.computeIfPresent(key, (k, cur) -> cur.sequence < seq ? null : cur));
    leftOut(damaged, tombstones);
    rolledForward = added[0] + tombstones.size();
    if (rolledForward > 0) {
      log.info("{}: {} blocks and {} deletes found in records newer than the journal", dir,
          added[0], tombstones.size());
    }
  }

  /** The disaster path: the index is whatever intact records the super-blocks hold. */
  private void rebuildByScan() {
    rebuilt = true;
    index.clear();
    Map<BlockKey, Long> tombstones = new HashMap<>();
    Map<BlockKey, Location> damaged = new HashMap<>();
    int done = 0;
    long[] corrupt = {0};
    for (SuperBlock sb : superBlocks.values()) {
      Records.scan(sb, sb.sizeBytes(), (kind, key, loc) -> {
        maxSequence = Math.max(maxSequence, loc.sequence);
        if (kind == KIND_TOMBSTONE) {
          tombstones.merge(key, loc.sequence, Math::max);
        } else if (Records.payloadIntact(sb, loc)) {
          // a block moved forward keeps its sequence: the later super-block's copy wins
          index.merge(key, loc, (cur, nu) -> nu.sequence >= cur.sequence ? nu : cur);
        } else {
          corrupt[0]++;
          damaged.merge(key, loc, (cur, nu) -> nu.sequence >= cur.sequence ? nu : cur);
        }
      });
      done++;
      log.info("rebuilding the index of {}: scanned {} of {} super-blocks, {} blocks so far",
          dir, done, superBlocks.size(), index.size());
    }
    tombstones.forEach((key, seq) -> index.computeIfPresent(key, (k, cur) -> cur.sequence < seq ? null : cur));
    leftOut(damaged, tombstones);
    if (corrupt[0] > 0) {
      log.warn("{}: {} records failed their checksum and were left out", dir, corrupt[0]);
    }
  }

  /**
   * Notes as lost each of the {@code damaged} records (the newest damaged record per key) that
   * would be its key's block: newer than the key's indexed record and than its last tombstone.
   */
  private void leftOut(Map<BlockKey, Location> damaged, Map<BlockKey, Long> tombstones) {
    damaged.forEach((key, loc) -> {
      Location indexed = index.get(key);
      Long deleted = tombstones.get(key);
      if ((indexed == null || indexed.sequence < loc.sequence)
          && (deleted == null || deleted < loc.sequence)) {
        lostBlocks.add(new LostBlock(key, loc, Loss.RECORD_DAMAGED));
      }
    });
  }

  /** Closes every super-block opened. */
  public void close() {
    superBlocks.values().forEach(SuperBlock::close);
    droppedSuperBlocks.forEach(SuperBlock::close);
  }
}
