package dev.kvcache.disk.internal;

import static dev.kvcache.disk.internal.JournalLayout.*;

import dev.kvcache.disk.device.DeviceFile;
import dev.kvcache.disk.device.StorageDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The metadata journal: 64-byte entries appended with one positional write each, so they reach
 * the operating system (and survive a crash of the process) before the append returns. {@link
 * #awaitDurable} forces them to the device with group commit: threads waiting at the same time
 * share one {@code fsync}.
 */
public final class Journal implements AutoCloseable {

  private final long generation;
  private final Path path;
  private final DeviceFile channel;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition forced = lock.newCondition();
  private long appended;
  private long durable;
  private boolean forcing;
  private boolean retired;

  private Journal(long generation, Path path, DeviceFile channel, long length) {
    this.generation = generation;
    this.path = path;
    this.channel = channel;
    this.appended = length;
    this.durable = 0;
  }

  public static String fileName(long generation) {
    return String.format("journal-%016x.kvj", generation);
  }

  /**
   * Creates journal {@code generation} in {@code dir}, with its header forced to the device. A
   * file it could not write whole (a full file system) is deleted again.
   */
  public static Journal create(StorageDevice device, Path dir, long generation)
      throws IOException {
    Path path = dir.resolve(fileName(generation));
    DeviceFile ch = device.create(path);
    try {
      ByteBuffer h = ByteBuffer.allocate(FILE_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
      h.putInt(MAGIC_OFFSET, JOURNAL_MAGIC);
      h.put(VERSION_OFFSET, (byte) JOURNAL_VERSION);
      h.putLong(GENERATION_OFFSET, generation);
      h.putInt(CRC_OFFSET, SuperBlock.crc(h, 0, CRC_OFFSET));
      ch.write(h, 0);
      ch.force();
      device.forceDirectory(dir);
      return new Journal(generation, path, ch, FILE_HEADER_BYTES);
    } catch (IOException | RuntimeException e) {
      ch.close();
      device.delete(path);
      throw e;
    }
  }

  public long generation() {
    return generation;
  }

  public Path path() {
    return path;
  }

  /** Bytes in the journal file. */
  public long sizeBytes() {
    lock.lock();
    try {
      return appended;
    } finally {
      lock.unlock();
    }
  }

  /** Appends one entry; returns a ticket for {@link #awaitDurable} on this journal. */
  public long append(ByteBuffer entry) throws IOException {
    lock.lock();
    try {
      if (retired) {
        throw new IllegalStateException("journal " + path + " was retired by a checkpoint");
      }
      channel.write(entry.duplicate(), appended);
      appended += ENTRY_BYTES;
      return appended;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Returns once every entry up to {@code ticket}, a ticket of this journal, is on the device (or
   * in a durable checkpoint, once the journal is {@link #retire retired}).
   */
  public void awaitDurable(long ticket) throws IOException {
    lock.lock();
    try {
      while (durable < ticket) {
        if (forcing) {
          forced.awaitUninterruptibly();
          continue;
        }
        forcing = true;
        long target = appended;
        lock.unlock();
        try {
          channel.force();
        } finally {
          lock.lock();
          forcing = false;
          forced.signalAll();
        }
        durable = Math.max(durable, target);
      }
    } finally {
      lock.unlock();
    }
  }

  /** Forces everything appended so far. */
  public void force() throws IOException {
    awaitDurable(sizeBytes());
  }

  /**
   * Ends this journal once a durable checkpoint holds every change it records: waits for a force
   * under way, counts every entry as durable (a waiter returns at once) and closes the file. No
   * entry may be appended after it.
   */
  public void retire() throws IOException {
    lock.lock();
    try {
      while (forcing) {
        forced.awaitUninterruptibly();
      }
      retired = true;
      durable = appended;
      forced.signalAll();
      channel.close();
    } finally {
      lock.unlock();
    }
  }

  /** Closes the file; waits for a force under way first, so no waiter forces a closed file. */
  @Override
  public void close() throws IOException {
    lock.lock();
    try {
      while (forcing) {
        forced.awaitUninterruptibly();
      }
      channel.close();
    } finally {
      lock.unlock();
    }
  }

  /** What {@link #replay} hands over. */
  public interface Visitor {
    /**
     * A valid entry, in order. A put that is not {@code confirmed} may have reached the device
     * before its record did: its record must be checked before it is believed.
     */
    void entry(JournalEntry entry, boolean confirmed);
  }

  /**
   * Reads journal {@code file}, handing each valid entry to {@code entries} in order. A torn or
   * corrupt entry ends the journal; with {@code cutTornTail} the file is cut there. A put is
   * confirmed by its flag, by a later sync entry past it, or by being in a version 1 journal.
   *
   * @return the number of valid entries, or -1 if the file header is not a valid journal header
   */
  public static long replay(StorageDevice device, Path file, long expectedGeneration,
      boolean cutTornTail, Visitor entries) throws IOException {
    try (DeviceFile ch = device.open(file, cutTornTail)) {
      long size = ch.size();
      ByteBuffer h = ByteBuffer.allocate(FILE_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
      ch.read(h, 0);
      int version = h.get(VERSION_OFFSET) & 0xff;
      if (h.hasRemaining() || h.getInt(MAGIC_OFFSET) != JOURNAL_MAGIC
          || h.getInt(CRC_OFFSET) != SuperBlock.crc(h, 0, CRC_OFFSET)
          || (version != 1 && version != JOURNAL_VERSION)
          || h.getLong(GENERATION_OFFSET) != expectedGeneration) {
        return -1;
      }
      long[] confirmedBelow = {version == 1 ? Long.MAX_VALUE : FILE_HEADER_BYTES};
      long end = scan(ch, size, (e, at) -> {
        if (e.type == TYPE_SYNC) {
          confirmedBelow[0] = Math.max(confirmedBelow[0], e.sequence);
        }
      });
      scan(ch, end, (e, at) ->
          entries.entry(e, e.type != TYPE_PUT || e.recordDurable || at < confirmedBelow[0]));
      if (end < size && cutTornTail) {
        ch.setSize(end);
      }
      return (end - FILE_HEADER_BYTES) / ENTRY_BYTES;
    }
  }

  /** An entry and its offset in the file. */
  private interface Positioned {
    void entry(JournalEntry e, long at);
  }

  /** Hands over the valid entries before {@code limit}; returns the end of the last one. */
  private static long scan(DeviceFile ch, long limit, Positioned entries) throws IOException {
    ByteBuffer buf = ByteBuffer.allocateDirect(ENTRY_BYTES * 4096);
    long pos = FILE_HEADER_BYTES;
    while (pos < limit) {
      buf.clear().limit((int) Math.min(buf.capacity(), limit - pos));
      ch.read(buf, pos);
      buf.flip();
      int at = 0;
      for (; at + ENTRY_BYTES <= buf.limit(); at += ENTRY_BYTES) {
        JournalEntry e = JournalEntry.read(buf, at);
        if (e == null) {
          return pos + at; // a bad entry ends the journal
        }
        entries.entry(e, pos + at);
      }
      pos += at;
      if (at < buf.capacity()) {
        break; // the end of the file (or a torn entry)
      }
    }
    return pos;
  }
}
