package dev.kvcache.disk.internal;

import static dev.kvcache.disk.internal.RecordLayout.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One super-block file: records are appended to it with positional writes (from the caller's
 * buffer straight to the page cache) and read through a read-only mapping of the whole file.
 *
 * <p>Readers pin it while they use its mapping; a dropped super-block is unmapped and deleted when
 * the last pin is released, so a lease never sees its file vanish.
 */
public final class SuperBlock {

  private static final Logger log = LoggerFactory.getLogger(SuperBlock.class);

  private final int id;
  private final Path path;
  private final FileChannel channel;
  private final long sizeBytes;
  private final MappedByteBuffer map;
  /** Pins held; -1 once unmapped. */
  private final AtomicInteger pins = new AtomicInteger();
  private final AtomicLong liveBytes = new AtomicLong();
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

  private SuperBlock(int id, Path path, FileChannel channel, long sizeBytes, long end,
      long lowestSequence) throws IOException {
    this.id = id;
    this.lowestSequence = new AtomicLong(lowestSequence);
    this.path = path;
    this.channel = channel;
    this.sizeBytes = sizeBytes;
    this.map = channel.map(FileChannel.MapMode.READ_ONLY, 0, sizeBytes);
    this.end = end;
  }

  public static String fileName(int id) {
    return String.format("sb-%08x.kvsb", id);
  }

  /** Creates a new, empty super-block file of {@code sizeBytes} (sparse until written). */
  public static SuperBlock create(Path dir, int id, long sizeBytes) throws IOException {
    Path path = dir.resolve(fileName(id));
    FileChannel ch = FileChannel.open(path, Set.of(StandardOpenOption.CREATE_NEW,
        StandardOpenOption.READ, StandardOpenOption.WRITE), OwnerOnly.fileAttributes(dir));
    try {
      ByteBuffer h = ByteBuffer.allocate(FILE_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
      h.putInt(FILE_MAGIC_OFFSET, FILE_MAGIC);
      h.put(FILE_VERSION_OFFSET, (byte) VERSION);
      h.putInt(FILE_ID_OFFSET, id);
      h.putLong(FILE_SIZE_OFFSET, sizeBytes);
      h.putLong(FILE_CREATED_OFFSET, System.currentTimeMillis());
      h.putInt(FILE_CRC_OFFSET, crc(h, 0, FILE_CRC_OFFSET));
      writeFully(ch, h, 0);
      ch.truncate(sizeBytes);
      if (ch.size() < sizeBytes) {
        ch.write(ByteBuffer.allocate(1), sizeBytes - 1);
      }
      return new SuperBlock(id, path, ch, sizeBytes, FIRST_RECORD_OFFSET, Long.MAX_VALUE);
    } catch (IOException | RuntimeException e) {
      ch.close();
      Files.deleteIfExists(path);
      throw e;
    }
  }

  /**
   * Opens an existing super-block file.
   *
   * @return null if the file's header is damaged (it holds nothing usable)
   * @throws IOException if it cannot be read, or was written by an unknown format version
   */
  public static SuperBlock open(Path path, int expectedId) throws IOException {
    FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
    try {
      ByteBuffer h = ByteBuffer.allocate(FILE_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
      while (h.hasRemaining() && ch.read(h, h.position()) > 0) {}
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
      SuperBlock sb = new SuperBlock(expectedId, path, ch, size, size, 0);
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

  public Path path() {
    return path;
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
    writeFully(channel, src, position);
  }

  /** Forces written bytes to the device (data only, as fdatasync). */
  public void force() throws IOException {
    channel.force(false);
  }

  /** Cuts the file to {@code length} bytes (after recovery, to give back an unused tail). */
  public void truncate(long length) throws IOException {
    channel.truncate(length);
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
      Unmapper.unmap(map);
      try {
        channel.close();
        if (deleteOnRelease) {
          Files.deleteIfExists(path);
        }
      } catch (IOException e) {
        log.warn("could not release super-block {}: {}", path, e.toString());
      }
    }
  }

  static int crc(ByteBuffer b, int from, int length) {
    CRC32C crc = new CRC32C();
    crc.update(b.duplicate().position(from).limit(from + length));
    return (int) crc.getValue();
  }

  static void writeFully(FileChannel ch, ByteBuffer src, long position) throws IOException {
    while (src.hasRemaining()) {
      position += ch.write(src, position);
    }
  }
}
