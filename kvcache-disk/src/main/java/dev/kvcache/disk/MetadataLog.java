package dev.kvcache.disk;

import dev.kvcache.BlockKey;
import dev.kvcache.disk.device.StorageDevice;
import dev.kvcache.disk.internal.Checkpoint;
import dev.kvcache.disk.internal.DirectoryState;
import dev.kvcache.disk.internal.Journal;
import dev.kvcache.disk.internal.JournalEntry;
import dev.kvcache.disk.internal.Location;
import dev.kvcache.disk.internal.SuperBlock;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The disk tier's metadata: the journal of index changes, and the checkpoints of the whole index
 * that replace it once it grows past {@link DiskTierConfig#checkpointJournalBytes()} (formats and
 * recovery in {@code docs/disk-format.md}). Entries are appended under one lock, together with
 * the index change they record, so that replaying the journal reproduces the order the index saw.
 *
 * <p>The order of forces is what makes a power loss safe: a record is on the device before an
 * entry that confirms it (under {@link SyncPolicy#ALWAYS} before its own entry; otherwise before a
 * sync entry past it), a checkpoint's records before the checkpoint, and an old journal before the
 * first entry of the next one.
 */
final class MetadataLog {

  private static final Logger log = LoggerFactory.getLogger(MetadataLog.class);

  /** Forces the records written so far to the device. */
  @FunctionalInterface
  interface RecordForcer {
    void forceRecords() throws IOException;
  }

  /** Where an entry went: awaited on that journal, whichever is current by then. */
  record Ticket(Journal journal, long end) {
    void awaitDurable() throws IOException {
      journal.awaitDurable(end);
    }
  }

  private final StorageDevice device;
  private final Path dir;
  private final SyncPolicy policy;
  private final long checkpointJournalBytes;
  private final RecordForcer records;
  private final Supplier<Iterable<Map.Entry<BlockKey, Location>>> index;
  private final LongSupplier maxSequence;
  /** Makes journal order the order of index changes; guards the journal's swap. */
  private final Object commitLock = new Object();
  /** Makes syncs one at a time: a sync entry must not pass a force still under way. */
  private final Object syncLock = new Object();
  private final AtomicBoolean checkpointing = new AtomicBoolean();
  private final LongAdder syncs = new LongAdder();
  /** The journal; null while it cannot be created (a full file system). */
  private volatile Journal journal;
  /** The generation of the journal to create when there is none. */
  private final long firstGeneration;
  private volatile long checkpointBytes;

  MetadataLog(StorageDevice device, Path dir, SyncPolicy policy, long checkpointJournalBytes,
      long firstGeneration, RecordForcer records,
      Supplier<Iterable<Map.Entry<BlockKey, Location>>> index, LongSupplier maxSequence) {
    this.device = device;
    this.dir = dir;
    this.policy = policy;
    this.checkpointJournalBytes = checkpointJournalBytes;
    this.firstGeneration = firstGeneration;
    this.records = records;
    this.index = index;
    this.maxSequence = maxSequence;
  }

  /**
   * After a recovery: keeps the checkpoint if a clean close left it as the whole story, else
   * writes one (the super-blocks forced first: what a crash left may be in the page cache alone)
   * and deletes the journals it covers. A checkpoint that cannot be written leaves the journals
   * for the next open.
   */
  void recovered(DirectoryState state, Iterable<SuperBlock> superBlocks) throws IOException {
    boolean checkpointCurrent = state.checkpointLoaded && state.journals.isEmpty()
        && state.rolledForward == 0 && state.droppedSuperBlocks.isEmpty()
        && state.damagedSuperBlocks.isEmpty();
    if (checkpointCurrent) {
      checkpointBytes = Checkpoint.size(device, dir);
      return;
    }
    try {
      checkpointBytes = Checkpoint.write(device, dir, firstGeneration, maxSequence.getAsLong(),
          index.get(), () -> {
            for (SuperBlock sb : superBlocks) {
              sb.force();
            }
          });
      for (Path replayed : state.journals.values()) {
        device.delete(replayed); // the checkpoint covers them now
      }
    } catch (IOException e) { // a full file system: the journals stay, for the next open
      log.warn("{}: cannot write a checkpoint ({}); the next open replays the journals again",
          dir, e.toString());
    }
  }

  /** Whether there is a journal to append to. */
  boolean ready() {
    return journal != null;
  }

  /** Creates the journal if there is none yet (it could not be created before). */
  void start() throws IOException {
    synchronized (commitLock) {
      if (journal == null) {
        journal = Journal.create(device, dir, firstGeneration);
      }
    }
  }

  /** Appends {@code entry} and applies its change to the index, in the same order for both. */
  Ticket append(ByteBuffer entry, Runnable apply) throws IOException {
    synchronized (commitLock) {
      Journal j = journal;
      long end = j.append(entry);
      apply.run();
      return new Ticket(j, end);
    }
  }

  /** Makes the index change {@code change}, and appends {@code entry} if it did; null if not. */
  Ticket appendIf(BooleanSupplier change, ByteBuffer entry) throws IOException {
    synchronized (commitLock) {
      if (!change.getAsBoolean()) {
        return null;
      }
      Journal j = journal;
      return new Ticket(j, j.append(entry));
    }
  }

  /**
   * Records a change in the journal and applies it to the index. Under {@link SyncPolicy#ALWAYS}
   * the record in {@code written} is forced before the entry is appended (so that no journal force,
   * another put's included, makes the entry durable before its record), and the entry is awaited.
   * A journal grown past its bound is then replaced by a checkpoint.
   */
  void commit(ByteBuffer entry, SuperBlock written, Runnable apply) throws IOException {
    boolean always = policy == SyncPolicy.ALWAYS;
    if (always && written != null) {
      written.force();
    }
    Ticket ticket = append(entry, apply);
    if (always) {
      ticket.awaitDurable();
    }
    if (ticket.journal().sizeBytes() > checkpointJournalBytes) {
      try {
        checkpoint();
      } catch (IOException e) { // the change is journalled: the journal just grows on
        log.warn("{}: cannot write a checkpoint: {}", dir, e.toString());
      }
    }
  }

  /**
   * Forces the records written so far, then the journal, with a sync entry between that confirms
   * the entries before it: after it returns, a power loss loses none of them.
   */
  void sync() throws IOException {
    synchronized (syncLock) {
      Journal j = journal;
      long covered = j == null ? 0 : j.sizeBytes();
      records.forceRecords();
      if (j != null) {
        synchronized (commitLock) {
          if (journal == j) { // else a checkpoint retired it, and holds all it said
            j.append(JournalEntry.sync(covered));
          }
        }
        j.force();
      }
    }
    syncs.increment();
  }

  /** Syncs completed. */
  long syncs() {
    return syncs.sum();
  }

  /**
   * Writes a checkpoint of the index and starts a new journal generation. The old journal is
   * retired once the checkpoint is durable: it holds nothing the checkpoint lacks, so a put still
   * waiting on it returns.
   */
  void checkpoint() throws IOException {
    if (!checkpointing.compareAndSet(false, true)) {
      return;
    }
    try {
      Journal old;
      long next;
      boolean durable = policy != SyncPolicy.NONE;
      if (durable) {
        records.forceRecords(); // most of it, before commits wait for the rest
      }
      synchronized (commitLock) {
        old = journal;
        if (durable) {
          // the old journal whole on the device before any entry of the next one: until the
          // checkpoint is in place, recovery replays both, and a drop in the next one must not
          // outlive the put in the old one that made the dropped copy dead
          records.forceRecords();
          old.force();
        }
        next = old.generation() + 1;
        journal = Journal.create(device, dir, next);
      }
      checkpointBytes = Checkpoint.write(device, dir, next, maxSequence.getAsLong(), index.get(),
          records::forceRecords);
      old.retire();
      device.delete(old.path());
    } finally {
      checkpointing.set(false);
    }
  }

  /**
   * At close: a checkpoint of the index, so that the next open reads one file. Nothing if there
   * is no journal: nothing changed since the open, whose metadata stays as it was.
   */
  void closeWithCheckpoint() throws IOException {
    Journal old = journal;
    if (old != null) {
      Checkpoint.write(device, dir, old.generation() + 1, maxSequence.getAsLong(), index.get(),
          records::forceRecords);
      old.retire();
      device.delete(old.path());
    }
  }

  /** Closes the journal's file. */
  void closeFile() {
    try {
      if (journal != null) {
        journal.close();
      }
    } catch (IOException e) {
      log.debug("closing the journal: {}", e.toString());
    }
  }

  /** Bytes of the journal and the checkpoint. */
  long bytes() {
    Journal j = journal;
    return checkpointBytes + (j == null ? 0 : j.sizeBytes());
  }
}
