package dev.kvcache.disk.internal;

import static dev.kvcache.disk.internal.RecordLayout.*;

import dev.kvcache.disk.device.DeviceFile;
import dev.kvcache.disk.device.StorageDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One super-block file: records are appended to it with positional writes (from the caller's
 * buffer straight to the device's file) and read through a read-only mapping of the whole file.
 *
 * <p>Readers pin it while they use its mapping; a dropped super-block is unmapped and deleted when
 * the last pin is released, so a lease never sees its file vanish.
 */
public final class SuperBlock {

  private static final Logger log = LoggerFactory.getLogger(SuperBlock.class);

  private final int id;
  /**
   * The tag ({@link dev.kvcache.Namespace#tag()}) of the namespace whose quota's super-blocks this
   * is one of; 0 for the super-blocks the namespaces without a quota share.
   */
  private final long owner;
  private final StorageDevice device;
  private final DeviceFile file;
  private final long sizeBytes;
  private final ByteBuffer map;
  /** Pins held; -1 once unmapped. */
  private final AtomicInteger pins = new AtomicInteger();
  private final AtomicLong liveBytes = new AtomicLong();
  /** Records reserved here whose write has not finished (indexed, or given up). */
  private final AtomicInteger unfinished = new AtomicInteger();
  /**
   * The lowest sequence number of the records written here (a block moved forward keeps its old
   * one); 0, for "any", in a super-block from an earlier run.
   */
  private final AtomicLong lowestSequence;
  private volatile boolean retired;
  private volatile boolean sealed;
  private volatile boolean deleteOnRelease;
  /** End of the last record: the next write position while active, the used length once sealed. */
  private volatile long end;

  private SuperBlock(int id, long owner, StorageDevice device, DeviceFile file, long sizeBytes,
      long end, long lowestSequence) throws IOException {
    this.id = id;
    this.owner = owner;
    this.lowestSequence = new AtomicLong(lowestSequence);
    this.device = device;
    this.file = file;
    this.sizeBytes = sizeBytes;
    this.map = file.map(sizeBytes);
    this.end = end;
  }

  public static String fileName(int id) {
    return String.format("sb-%08x.kvsb", id);
  }

  /** Creates a new, empty super-block file of {@code sizeBytes} (sparse until written). */
  public static SuperBlock create(StorageDevice device, Path dir, int id, long sizeBytes)
      throws IOException {
    return create(device, dir, id, sizeBytes, 0);
  }

  /**
   * Creates a new, empty super-block file of {@code sizeBytes} (sparse until written) for the
   * quota of the namespace whose tag is {@code owner} (0: for the namespaces without one).
   */
  public static SuperBlock create(StorageDevice device, Path dir, int id, long sizeBytes,
      long owner) throws IOException {
    Path path = dir.resolve(fileName(id));
    DeviceFile ch = device.create(path);
    try {
      ByteBuffer h = ByteBuffer.allocate(FILE_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
      h.putInt(FILE_MAGIC_OFFSET, FILE_MAGIC);
      h.put(FILE_VERSION_OFFSET, (byte) VERSION);
      h.putInt(FILE_ID_OFFSET, id);
      h.putLong(FILE_SIZE_OFFSET, sizeBytes);
      h.putLong(FILE_CREATED_OFFSET, System.currentTimeMillis());
      h.putLong(FILE_OWNER_OFFSET, owner);
      h.putInt(FILE_CRC_OFFSET, crc(h, 0, FILE_CRC_OFFSET));
      ch.write(h, 0);
      ch.setSize(sizeBytes);
      return new SuperBlock(id, owner, device, ch, sizeBytes, FIRST_RECORD_OFFSET,
          Long.MAX_VALUE);
    } catch (IOException | RuntimeException e) {
      ch.close();
      device.delete(path);
      throw e;
    }
  }

  /**
   * Opens an existing super-block file.
   *
   * @return null if the file's header is damaged (it holds nothing usable)
   * @throws IOException if it cannot be read, or was written by an unknown format version
   */
  public static SuperBlock open(StorageDevice device, Path path, int expectedId)
      throws IOException {
    DeviceFile ch = device.open(path, true);
    try {
      ByteBuffer h = ByteBuffer.allocate(FILE_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
      ch.read(h, 0);
      if (h.hasRemaining() || h.getInt(FILE_MAGIC_OFFSET) != FILE_MAGIC
          || h.getInt(FILE_CRC_OFFSET) != crc(h, 0, FILE_CRC_OFFSET)
          || h.getInt(FILE_ID_OFFSET) != expectedId) {
        ch.close();
        return null;
      }
      int version = h.get(FILE_VERSION_OFFSET) & 0xff;
      if (version != VERSION) {
        throw new IOException(path + " has super-block format version " + version
            + "; this build reads version " + VERSION);
      }
      long size = ch.size();
      if (size > Integer.MAX_VALUE || size < FIRST_RECORD_OFFSET) {
        ch.close();
        return null;
      }
      SuperBlock sb = new SuperBlock(expectedId, h.getLong(FILE_OWNER_OFFSET), device, ch, size,
          size, 0);
      sb.seal(); // a super-block from an earlier run is never appended to
      return sb;
    } catch (IOException | RuntimeException e) {
      ch.close();
      throw e;
    }
  }

  public int id() {
    return id;
  }

  /**
   * The tag of the namespace whose quota this super-block counts against; 0 if it is one the
   * namespaces without a quota share (and in files written before quotas).
   */
  public long owner() {
    return owner;
  }

  public Path path() {
    return file.path();
  }

  public long sizeBytes() {
    return sizeBytes;
  }

  public long end() {
    return end;
  }

  public void end(long end) {
    this.end = end;
  }

  /** Whether records are no longer appended here (every super-block but the active one). */
  public boolean isSealed() {
    return sealed;
  }

  public void seal() {
    sealed = true;
  }

  public AtomicLong liveBytes() {
    return liveBytes;
  }

  /** Notes that a record was reserved here; {@link #finishRecord} once it is indexed or dropped. */
  public void startRecord() {
    unfinished.incrementAndGet();
  }

  public void finishRecord() {
    unfinished.decrementAndGet();
  }

  /**
   * Whether a record reserved here may still enter the index: such a super-block must not be
   * compacted, whose scan would miss the record and whose drop would then evict it.
   */
  public boolean hasUnfinishedRecords() {
    return unfinished.get() > 0;
  }

  /** Notes that a record with this sequence number is being written here. */
  public void recordSequence(long sequence) {
    lowestSequence.accumulateAndGet(sequence, Math::min);
  }

  /** Whether a record older than {@code sequence} may be here (always, for an earlier run's file). */
  public boolean mayHoldRecordsBefore(long sequence) {
    return lowestSequence.get() < sequence;
  }

  /** Writes {@code src}'s remaining bytes at {@code position}; advances {@code src}. */
  public void write(ByteBuffer src, long position) throws IOException {
    file.write(src, position);
  }

  /**
   * The alignment of {@link #writeDirect}, if it divides the page (a record written directly
   * starts on a page of its own); 0 if this file takes no direct writes.
   */
  public int directAlignment() {
    int a = file.directAlignment();
    return a > 0 && PAGE % a == 0 ? a : 0;
  }

  /** Writes {@code src}'s remaining bytes at {@code position} past the page cache; aligned. */
  public void writeDirect(ByteBuffer src, long position) throws IOException {
    file.writeDirect(src, position);
  }

  /**
   * Reads into {@code dst} from {@code position} past the page cache, as {@link
   * DeviceFile#readDirect} does; aligned. Pin first.
   *
   * @return the bytes read: fewer than asked only at the end of the file
   */
  public int readDirect(ByteBuffer dst, long position) throws IOException {
    return file.readDirect(dst, position);
  }

  /**
   * Whether the {@code length} mapped bytes at {@code offset} are all in memory (as {@code
   * mincore} tells it, a hint), so that reading them through the mapping waits on no device. Pin
   * first.
   */
  public boolean inMemory(long offset, int length) {
    return !(map.slice((int) offset, length) instanceof MappedByteBuffer m) || m.isLoaded();
  }

  /** Forces written bytes to the device (data only, as fdatasync). */
  public void force() throws IOException {
    file.force();
  }

  /** Cuts the file to {@code length} bytes (after recovery, to give back an unused tail). */
  public void truncate(long length) throws IOException {
    file.setSize(length);
  }

  /** A read-only view of {@code length} mapped bytes at {@code offset}; pin first. */
  public ByteBuffer slice(long offset, int length) {
    return map.slice((int) offset, length).asReadOnlyBuffer();
  }

  /** A read-only, little-endian view of the whole mapping, for absolute reads; pin first. */
  public ByteBuffer view() {
    return map.duplicate().order(ByteOrder.LITTLE_ENDIAN);
  }

  /** Pins the mapping; false if the super-block is already unmapped. */
  public boolean pin() {
    for (int p = pins.get(); p >= 0; p = pins.get()) {
      if (pins.compareAndSet(p, p + 1)) {
        return true;
      }
    }
    return false;
  }

  public void unpin() {
    if (pins.decrementAndGet() == 0 && retired) {
      release();
    }
  }

  /** No new records will come here; the file is deleted once no pin holds it. */
  public void drop() {
    retire(true);
  }

  /** Whether the mapping is gone (and, if dropped, the file). */
  public boolean isReleased() {
    return pins.get() < 0;
  }

  /**
   * Closes without deleting (the directory is being closed): at once if nothing is pinned, else
   * when the last pin is released.
   */
  public void close() {
    retire(false);
  }

  private void retire(boolean delete) {
    deleteOnRelease = delete;
    retired = true;
    if (pins.get() == 0) {
      release();
    }
  }

  private void release() {
    if (pins.compareAndSet(0, -1)) {
      file.unmap(map);
      try {
        if (deleteOnRelease) {
          shrinkInSteps();
        }
        file.close();
        if (deleteOnRelease) {
          device.delete(file.path());
        }
      } catch (IOException e) {
        log.warn("could not release super-block {}: {}", file.path(), e.toString());
      }
    }
  }

  /** Bytes a dropped file gives back per step before it is deleted. */
  static final long SHRINK_STEP_BYTES = 16L << 20;

  /**
   * Cuts a dropped file down a step at a time before it is deleted. Deleting a large file frees
   * all its blocks at once, and the file system makes writes to other files wait meanwhile (45 to
   * 60 ms for 256 MiB on ext4 here, the tail of the puts); in steps, the puts' writes go on
   * between them ({@code docs/benchmarks/history.md}, "The 2 MiB tail and the depth of the direct writes").
   */
  private void shrinkInSteps() {
    try {
      for (long size = file.size() - SHRINK_STEP_BYTES; size > 0; size -= SHRINK_STEP_BYTES) {
        file.setSize(size);
      }
    } catch (IOException e) {
      log.debug("could not shrink {} before deleting it: {}", file.path(), e.toString());
    }
  }

  static int crc(ByteBuffer b, int from, int length) {
    CRC32C crc = new CRC32C();
    crc.update(b.duplicate().position(from).limit(from + length));
    return (int) crc.getValue();
  }
}
