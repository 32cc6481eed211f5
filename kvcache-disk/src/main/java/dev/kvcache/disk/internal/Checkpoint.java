package dev.kvcache.disk.internal;

import static dev.kvcache.disk.internal.JournalLayout.*;

import dev.kvcache.BlockKey;
import dev.kvcache.disk.device.DeviceFile;
import dev.kvcache.disk.device.StorageDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.zip.CRC32C;

/**
 * The index checkpoint ({@code index.kvx}, see {@link JournalLayout}): every indexed block's
 * location, written atomically (temporary file, force, rename, force the directory).
 */
public final class Checkpoint {

  public static final String FILE_NAME = "index.kvx";
  private static final String TEMP_NAME = "index.kvx.tmp";

  /** What a checkpoint's header says. */
  public static final class Header {
    public final long nextGeneration;
    public final long maxSequence;
    public final long entryCount;

    Header(long nextGeneration, long maxSequence, long entryCount) {
      this.nextGeneration = nextGeneration;
      this.maxSequence = maxSequence;
      this.entryCount = entryCount;
    }
  }

  private Checkpoint() {}

  /** Work that must be done before a checkpoint replaces the last one. */
  @FunctionalInterface
  public interface Barrier {
    void run() throws IOException;
  }

  /**
   * Writes a checkpoint of {@code index} and returns its size in bytes. {@code recordsDurable}
   * runs once the entries are written and before the checkpoint is forced and renamed: it forces
   * every record the entries name (each was written before it entered the index), so that the
   * checkpoint never reaches the device before a record it names.
   */
  public static long write(StorageDevice device, Path dir, long nextGeneration, long maxSequence,
      Iterable<Map.Entry<BlockKey, Location>> index, Barrier recordsDurable) throws IOException {
    Path temp = dir.resolve(TEMP_NAME);
    long count;
    try {
      device.delete(temp); // left by a crash
      try (DeviceFile ch = device.create(temp)) {
        count = writeTemp(ch, nextGeneration, maxSequence, index, recordsDurable);
      }
    } catch (IOException | RuntimeException e) {
      device.delete(temp); // a full file system: give back what was written
      throw e;
    }
    device.rename(temp, dir.resolve(FILE_NAME));
    device.forceDirectory(dir);
    return FILE_HEADER_BYTES + (count + 1) * ENTRY_BYTES;
  }

  /** The size in bytes of the checkpoint in {@code dir}. */
  public static long size(StorageDevice device, Path dir) throws IOException {
    return device.size(dir.resolve(FILE_NAME));
  }

  /** Writes the checkpoint to {@code temp}, forced to the device; returns its entry count. */
  private static long writeTemp(DeviceFile ch, long nextGeneration, long maxSequence,
      Iterable<Map.Entry<BlockKey, Location>> index, Barrier recordsDurable) throws IOException {
    long count = 0;
    CRC32C entriesCrc = new CRC32C();
    ByteBuffer buf = ByteBuffer.allocateDirect(ENTRY_BYTES * 16384).order(ByteOrder.LITTLE_ENDIAN);
    long pos = FILE_HEADER_BYTES;
    for (Map.Entry<BlockKey, Location> e : index) {
      if (!buf.hasRemaining()) {
        pos = flush(ch, buf, pos, entriesCrc);
      }
      buf.put(JournalEntry.put(e.getKey(), e.getValue(), e.getValue().hits()));
      count++;
    }
    pos = flush(ch, buf, pos, entriesCrc);
    ByteBuffer trailer = ByteBuffer.allocate(ENTRY_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    trailer.putInt(MAGIC_OFFSET, TRAILER_MAGIC);
    trailer.putInt(ENTRIES_CRC_OFFSET, (int) entriesCrc.getValue());
    trailer.putInt(CRC_OFFSET, SuperBlock.crc(trailer, 0, CRC_OFFSET));
    ch.write(trailer, pos);
    ByteBuffer h = ByteBuffer.allocate(FILE_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    h.putInt(MAGIC_OFFSET, CHECKPOINT_MAGIC);
    h.put(VERSION_OFFSET, (byte) CHECKPOINT_VERSION);
    h.putLong(GENERATION_OFFSET, nextGeneration);
    h.putLong(MAX_SEQUENCE_OFFSET, maxSequence);
    h.putLong(ENTRY_COUNT_OFFSET, count);
    h.putInt(CRC_OFFSET, SuperBlock.crc(h, 0, CRC_OFFSET));
    ch.write(h, 0);
    recordsDurable.run();
    ch.force();
    return count;
  }

  private static long flush(DeviceFile ch, ByteBuffer buf, long pos, CRC32C crc)
      throws IOException {
    buf.flip();
    crc.update(buf.duplicate());
    int n = buf.remaining();
    ch.write(buf, pos);
    buf.clear();
    return pos + n;
  }

  /**
   * Reads the checkpoint in {@code dir}, handing each entry to {@code entries}.
   *
   * @return its header, or null if there is none or it is damaged (then nothing was handed over)
   */
  public static Header read(StorageDevice device, Path dir, BiConsumer<BlockKey, Location> entries)
      throws IOException {
    Path path = dir.resolve(FILE_NAME);
    try (DeviceFile ch = device.open(path, false)) {
      long size = ch.size();
      if (size < 2L * FILE_HEADER_BYTES || size > Integer.MAX_VALUE) {
        return null;
      }
      ByteBuffer map = ch.map(size);
      try {
        ByteBuffer m = map.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (m.getInt(MAGIC_OFFSET) != CHECKPOINT_MAGIC
            || m.getInt(CRC_OFFSET) != SuperBlock.crc(m, 0, CRC_OFFSET)
            || (m.get(VERSION_OFFSET) & 0xff) != CHECKPOINT_VERSION) {
          return null;
        }
        long count = m.getLong(ENTRY_COUNT_OFFSET);
        // compared by division: a count near Long.MAX_VALUE / 64 must not wrap into the file's size
        if (count < 0 || (size - FILE_HEADER_BYTES) % ENTRY_BYTES != 0
            || count != (size - FILE_HEADER_BYTES) / ENTRY_BYTES - 1) {
          return null;
        }
        int trailer = (int) (size - ENTRY_BYTES);
        CRC32C crc = new CRC32C();
        crc.update(m.duplicate().position(FILE_HEADER_BYTES).limit(trailer));
        if (m.getInt(trailer + MAGIC_OFFSET) != TRAILER_MAGIC
            || m.getInt(trailer + CRC_OFFSET) != SuperBlock.crc(m, trailer, CRC_OFFSET)
            || m.getInt(trailer + ENTRIES_CRC_OFFSET) != (int) crc.getValue()) {
          return null;
        }
        List<JournalEntry> read = new ArrayList<>((int) Math.min(count, 1 << 20));
        for (int at = FILE_HEADER_BYTES; at < trailer; at += ENTRY_BYTES) {
          JournalEntry e = JournalEntry.read(m, at);
          if (e == null || e.type != TYPE_PUT) {
            return null; // a writer never writes one: all of the checkpoint is refused
          }
          read.add(e);
        }
        for (JournalEntry e : read) {
          entries.accept(e.key, e.location);
        }
        return new Header(m.getLong(GENERATION_OFFSET), m.getLong(MAX_SEQUENCE_OFFSET), count);
      } finally {
        ch.unmap(map);
      }
    } catch (NoSuchFileException e) {
      return null;
    }
  }
}
