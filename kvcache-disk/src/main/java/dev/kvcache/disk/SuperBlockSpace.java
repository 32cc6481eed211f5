package dev.kvcache.disk;

import static dev.kvcache.disk.internal.RecordLayout.PAGE;
import static dev.kvcache.disk.internal.RecordLayout.alignUp;

import dev.kvcache.Namespace;
import dev.kvcache.disk.device.StorageDevice;
import dev.kvcache.disk.internal.FileSpace;
import dev.kvcache.disk.internal.RecordLayout;
import dev.kvcache.disk.internal.SuperBlock;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The disk tier's super-blocks and the room they take: the live ones by id, the active ones that
 * records are reserved in, the dropped ones that leases still pin, and which were written since
 * their last force. Reservations are made here; when an active super-block is full, it is sealed
 * and a new one started, the oldest dropped first (through the tier) while the files would pass
 * the capacity or leave less than the free-space floor. When no room can be made, it says why
 * ({@link #noRoom}), and the tier refuses puts until there is.
 * Each namespace with a disk quota has super-blocks of its own ({@link Streams}).
 */
final class SuperBlockSpace {

  private static final Logger log = LoggerFactory.getLogger(SuperBlockSpace.class);

  /** Drops a super-block to make room: its blocks leave the index as evictions. */
  @FunctionalInterface
  interface Dropper {
    void drop(SuperBlock victim) throws IOException;
  }

  /**
   * Where a record goes: a pinned super-block, where the reservation starts (the previous end of
   * the super-block), the payload offset, its end, and the record's sequence. Whoever reserves it
   * finishes the record once ({@link SuperBlock#finishRecord}) and unpins the super-block.
   */
  static final class Reservation {
    final SuperBlock sb;
    final long start;
    final long payload;
    final long end;
    final long sequence;

    Reservation(SuperBlock sb, long start, long payload, long end, long sequence) {
      this.sb = sb;
      this.start = start;
      this.payload = payload;
      this.end = end;
      this.sequence = sequence;
    }
  }

  private final DiskTierConfig config;
  /**
   * Whether a record larger than a page has its pages to itself ({@link
   * DiskTierConfig#directWrites()}).
   */
  private final boolean directPlacement;
  private final StorageDevice device;
  private final Path dir;
  private final FileSpace space;
  /** {@link DiskTierConfig#minFreeBytes()}, or its default for this file system. */
  private final long minFreeBytes;
  private final MetadataLog metadata;
  private final AtomicLong sequence;
  /** Live super-blocks by id, oldest first. */
  private final ConcurrentSkipListMap<Integer, SuperBlock> superBlocks;
  /** Dropped super-blocks whose files still exist while leases pin them. */
  private final Set<SuperBlock> retiring = ConcurrentHashMap.newKeySet();
  /** Super-blocks written since their last force. */
  private final Set<SuperBlock> dirty = ConcurrentHashMap.newKeySet();
  /** Guards reservations in the active super-block, its roll-over, and closing. */
  private final Object writeLock = new Object();
  private final AtomicInteger nextSuperBlockId;
  /** The streams and their active super-blocks (changed under {@link #writeLock}). */
  private final Streams streams;
  private Dropper dropper;
  private Runnable started;
  /** Why there is no room for puts (no super-block, no journal); null while there is. */
  private volatile String noRoom;
  /** The stream that found no room, while {@link #noRoom} is set. */
  private volatile long noRoomOwner;
  private volatile boolean closed;

  SuperBlockSpace(DiskTierConfig config, FileSpace space, MetadataLog metadata,
      AtomicLong sequence, Map<Integer, SuperBlock> found, int nextSuperBlockId)
      throws IOException {
    this.config = config;
    this.directPlacement = config.directWrites();
    this.device = config.device();
    this.dir = config.directory();
    this.space = space;
    this.minFreeBytes = config.minFreeBytes() >= 0
        ? config.minFreeBytes()
        : DiskTierConfig.defaultMinFreeBytes(space.totalBytes());
    this.metadata = metadata;
    this.sequence = sequence;
    this.superBlocks = new ConcurrentSkipListMap<>(found);
    this.nextSuperBlockId = new AtomicInteger(nextSuperBlockId);
    this.streams = new Streams(config, superBlocks);
  }

  /** The streams of super-blocks, one per namespace with a quota and a shared one. */
  Streams streams() {
    return streams;
  }

  /**
   * Starts taking puts: a journal and an active super-block, if there is room (nothing stored is
   * dropped to make room while opening). {@code dropper} makes room later; {@code started} runs
   * after each super-block started to make room for puts.
   */
  void open(Dropper dropper, Runnable started) throws IOException {
    this.dropper = dropper;
    this.started = started;
    synchronized (writeLock) {
      if (startJournal()) {
        rollOver(Streams.SHARED, false);
      }
    }
  }

  /** The live super-blocks by id, oldest first. */
  ConcurrentSkipListMap<Integer, SuperBlock> superBlocks() {
    return superBlocks;
  }

  boolean closed() {
    return closed;
  }

  /** @throws IllegalStateException if the tier is closed */
  void requireOpen() {
    if (closed) {
      throw new IllegalStateException("the disk tier in " + dir + " is closed");
    }
  }

  /** Stops reservations; false if it was closed already. */
  boolean close() {
    synchronized (writeLock) {
      if (closed) {
        return false;
      }
      closed = true;
      return true;
    }
  }

  /**
   * Creates the journal if there is none yet (it could not be created when the tier opened).
   *
   * @return false, with {@link #noRoom} saying why, if it still cannot be created
   */
  boolean ensureJournal() {
    synchronized (writeLock) {
      return startJournal();
    }
  }

  private boolean startJournal() {
    if (metadata.ready()) {
      return true;
    }
    try {
      metadata.start();
      if (streams.active(noRoomOwner) != null) {
        noRoom = null; // the journal was all that was missing
      }
      return true;
    } catch (IOException e) {
      if (noRoom == null) {
        log.warn("disk tier {} refuses puts and deletes until its journal can be created: {}", dir,
            e.toString());
      }
      noRoom = "cannot create the journal in " + dir + ": " + e.getMessage();
      return false;
    }
  }

  /**
   * Reserves room in {@code stream} ({@link Streams#of}) for a record of {@code stored} payload
   * bytes, with its sequence number; null if there is no room.
   *
   * @throws IllegalStateException if the tier is closed
   */
  Reservation reserve(long stream, long stored) throws IOException {
    return reserve(stream, stored, 0);
  }

  /**
   * Reserves room in {@code stream} ({@link Streams#of}) for a record of {@code stored} payload
   * bytes with a tag of {@code tagBytes} ({@link RecordLayout#tagBytes}) before its header, with
   * its sequence number; null if there is no room.
   *
   * @throws IllegalStateException if the tier is closed
   */
  Reservation reserve(long stream, long stored, int tagBytes) throws IOException {
    synchronized (writeLock) {
      requireOpen();
      if (!startJournal()) {
        return null;
      }
      SuperBlock active = streams.active(stream);
      if (active == null || recordEnd(payloadOffset(active.end(), stored, tagBytes), stored)
          > active.sizeBytes()) {
        if (!rollOver(stream, true)) {
          return null; // no active super-block until a later put finds room
        }
        active = streams.active(stream);
      }
      long start = active.end();
      long payload = payloadOffset(start, stored, tagBytes);
      active.end(recordEnd(payload, stored));
      SuperBlock sb = active;
      if (!sb.pin()) {
        throw new IllegalStateException("the active super-block is unmapped");
      }
      long seq = sequence.incrementAndGet();
      sb.recordSequence(seq); // a writer's later sequence keeps this a lower bound
      sb.startRecord(); // every caller finishes it, once
      return new Reservation(sb, start, payload, recordEnd(payload, stored), seq);
    }
  }

  /**
   * Where a record of {@code stored} payload bytes goes after {@code cursor}: as {@link
   * RecordLayout#payloadOffset}; where writes are direct, a record larger than a page starts on a
   * page of its own, so that its pages are its alone (a direct write covers whole pages).
   */
  private long payloadOffset(long cursor, long stored, int tagBytes) {
    return RecordLayout.payloadOffset(
        (ownsPages(stored) ? alignUp(cursor, PAGE) : cursor) + tagBytes, stored);
  }

  /** The end of a record's room: its last page, whole, if it {@link #ownsPages}. */
  private long recordEnd(long payload, long stored) {
    return ownsPages(stored) ? alignUp(payload + stored, PAGE) : payload + stored;
  }

  /** Whether a record has whole pages to itself: one larger than a page, where writes are direct. */
  private boolean ownsPages(long stored) {
    return directPlacement && RecordLayout.largerThanAPage(stored);
  }

  /** After encoding into {@code r}, gives back the unused tail if nothing was reserved after it. */
  void giveBack(Reservation r, int stored) {
    synchronized (writeLock) {
      if (streams.isActive(r.sb) && r.sb.end() == r.end) {
        r.sb.end(recordEnd(r.payload, stored));
      }
    }
  }

  /**
   * After a failed write into {@code r}, gives the whole reservation back if nothing was reserved
   * after it, so no unwritten gap is left where scans read (on a full tmpfs, reading a gap
   * through the mapping faults).
   */
  void abandon(Reservation r) {
    synchronized (writeLock) {
      if (streams.isActive(r.sb) && r.sb.end() == r.end) {
        r.sb.end(r.start);
      }
    }
  }

  /**
   * Seals {@code stream}'s active super-block and starts a new one. With {@code mayDrop},
   * super-blocks are dropped ({@link Streams#victimFor}) while the stream's would pass its quota or the
   * files would exceed the capacity, and, if that is enough to get there, while the file system
   * would have less than the free-space floor left; a shortage that dropping every super-block
   * could not end (something else filled the file system) drops nothing. Without {@code mayDrop}
   * (while opening) nothing is dropped. Holds {@link #writeLock}.
   *
   * @return false if no room can be made; {@link #noRoom} then says why
   */
  private boolean rollOver(long stream, boolean mayDrop) throws IOException {
    long size = config.superBlockBytes();
    SuperBlock sealed = streams.deactivate(stream);
    if (sealed != null) {
      long used = alignUp(sealed.end(), PAGE);
      sealed.end(used);
      sealed.truncate(used); // its records stay dirty until the sync policy forces them
      sealed.seal();
    }
    if (!mayDrop || shortOfSpace(size) > droppableBytes()) {
      if (needsRoom(stream, size)) {
        return noRoom(stream, size);
      }
    }
    while (needsRoom(stream, size)) {
      SuperBlock victim = streams.victimFor(stream, size);
      if (victim == null) {
        return noRoom(stream, size);
      }
      dropper.drop(victim);
      reapRetired();
      if (!streams.overQuota(stream, size) && usedBytes() + size <= config.capacityBytes()
          && !retiring.isEmpty() && shortOfSpace(size) > 0) {
        return noRoom(stream, size); // the space is pinned by leases
      }
    }
    SuperBlock sb = SuperBlock.create(device, dir, nextSuperBlockId.getAndIncrement(), size,
        stream);
    if (config.syncPolicy() != SyncPolicy.NONE) {
      device.forceDirectory(dir); // the new file's name must survive a power loss too
    }
    superBlocks.put(sb.id(), sb);
    streams.activate(stream, sb);
    if (noRoom != null && noRoomOwner == stream) {
      noRoom = null;
      log.info("disk tier {} has room again and takes puts", dir);
    }
    if (mayDrop) {
      started.run(); // not while opening: see Reclaimer
    }
    return true;
  }

  /**
   * Whether a new super-block of {@code size} in {@code stream} would pass its quota, the capacity
   * or the free-space floor.
   */
  private boolean needsRoom(long stream, long size) throws IOException {
    return streams.overQuota(stream, size) || usedBytes() + size > config.capacityBytes()
        || shortOfSpace(size) > 0;
  }

  /**
   * The super-block background reclamation should free next ({@link Streams#pressed}); null if
   * no stream is near its limit.
   */
  SuperBlock pressed() {
    long retired = 0;
    for (SuperBlock sb : retiring) {
      if (!sb.isReleased()) {
        retired += alignUp(sb.end(), PAGE);
      }
    }
    // dropped super-blocks that readers still hold are freed by them, not by dropping more
    return streams.pressed(usedBytes() - retired, config.capacityBytes(),
        config.superBlockBytes());
  }

  /** Bytes the file system lacks for a new super-block of {@code size} above the floor. */
  private long shortOfSpace(long size) throws IOException {
    return size + minFreeBytes - space.usableBytes();
  }

  /** Bytes of file system space that dropping every sealed super-block would give back. */
  private long droppableBytes() {
    long bytes = 0;
    for (SuperBlock sb : superBlocks.values()) {
      bytes += alignUp(sb.end(), PAGE);
    }
    return bytes;
  }

  /** Notes that no super-block of {@code size} can be started in {@code stream}, and why; false. */
  private boolean noRoom(long stream, long size) throws IOException {
    String why = "no room for a new super-block of " + size + " bytes: the files take "
        + usedBytes() + " of the " + config.capacityBytes() + " bytes of capacity, and the file"
        + " system has " + space.usableBytes() + " bytes free, " + minFreeBytes + " of which are"
        + " kept free (minFreeBytes)";
    if (stream != 0) {
      why += "; the super-blocks of the namespace " + Namespace.ofTag(stream).map(String::valueOf)
          .orElse(Long.toHexString(stream)) + " take " + streams.bytes(stream)
          + " of its quota of " + streams.quota(stream) + " bytes";
    }
    if (noRoom == null && !closed) {
      log.warn("disk tier {} refuses puts until there is room: {}", dir, why);
    }
    noRoomOwner = stream;
    noRoom = why;
    return false;
  }

  /**
   * Why puts are refused for lack of room, checked again now (a probe sees space that came back
   * before the next put does, and the check only reads); null if they are not.
   */
  String noRoom() {
    String room = noRoom;
    return room == null || roomCameBack() ? null : room;
  }

  /**
   * Whether a put would now find the room {@link #noRoom} says there was not (for the journal and
   * the super-block it lacks), without dropping anything.
   */
  private boolean roomCameBack() {
    if (closed) {
      return false;
    }
    long stream = noRoomOwner;
    if (metadata.ready() && streams.active(stream) != null) {
      return true;
    }
    long size = streams.active(stream) != null ? 0 : config.superBlockBytes();
    try {
      return usedBytes() + size <= config.capacityBytes() && shortOfSpace(size) <= 0
          && !streams.overQuota(stream, size);
    } catch (IOException e) {
      log.debug("checking for room in {}: {}", dir, e.toString());
      return false;
    }
  }

  /** Notes that {@code sb} was written: the next force of what is dirty forces it. */
  void written(SuperBlock sb) {
    if (superBlocks.containsKey(sb.id())) {
      dirty.add(sb);
    }
  }

  /**
   * Forces every super-block written since it was last forced: every record whose journal entry
   * was appended before this started is then on the device.
   */
  void forceDirty() throws IOException {
    for (SuperBlock sb : superBlocks.values()) {
      if (dirty.remove(sb)) {
        try {
          sb.force();
        } catch (IOException e) {
          dirty.add(sb);
          throw e;
        }
      }
    }
  }

  /**
   * Takes a dropped super-block out of the live ones (its file goes once no lease pins it); false
   * if another thread did first.
   */
  boolean remove(SuperBlock victim) {
    if (superBlocks.remove(victim.id()) == null) {
      return false;
    }
    dirty.remove(victim);
    retiring.add(victim);
    return true;
  }

  /** Forgets dropped super-blocks whose files are gone. */
  void reapRetired() {
    retiring.removeIf(SuperBlock::isReleased);
  }

  /** The free space the tier leaves on its file system: its setting, or the default. */
  long minFreeBytes() {
    return minFreeBytes;
  }

  /** Bytes free on the tier's file system now; -1 if the file system cannot tell. */
  long fileSystemFreeBytes() {
    try {
      return space.usableBytes();
    } catch (IOException e) {
      return -1;
    }
  }

  /** Bytes the tier's files take: super-blocks (the active one whole), journal and checkpoint. */
  long usedBytes() {
    long used = metadata.bytes();
    for (SuperBlock sb : superBlocks.values()) {
      used += streams.isActive(sb) ? sb.sizeBytes() : alignUp(sb.end(), PAGE);
    }
    for (SuperBlock sb : retiring) {
      if (!sb.isReleased()) {
        used += alignUp(sb.end(), PAGE);
      }
    }
    return used;
  }

  /** At close: the active super-blocks forced and cut to their last page in use. */
  void sealActive() throws IOException {
    for (SuperBlock a : streams.actives()) {
      long used = alignUp(a.end(), PAGE);
      a.force();
      a.truncate(used);
      a.end(used);
    }
  }

  /** Closes every live super-block (leases still open keep theirs until released). */
  void closeFiles() {
    for (SuperBlock sb : superBlocks.values()) {
      sb.close();
    }
  }
}
