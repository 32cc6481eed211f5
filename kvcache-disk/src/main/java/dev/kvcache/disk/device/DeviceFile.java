package dev.kvcache.disk.device;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * An open file of a {@link StorageDevice}. Positional calls only: several threads write and read
 * different parts of one file at once.
 */
public interface DeviceFile extends Closeable {

  /** The file's path. */
  Path path();

  /** The file's size in bytes. */
  long size() throws IOException;

  /**
   * Writes all of {@code src}'s remaining bytes at {@code position}, growing the file if they end
   * past it; advances {@code src}. Visible to reads and mappings when it returns; on the device
   * after the next {@link #force}.
   */
  void write(ByteBuffer src, long position) throws IOException;

  /**
   * Reads into {@code dst} from {@code position} until it is full or the file ends.
   *
   * @return the bytes read
   */
  int read(ByteBuffer dst, long position) throws IOException;

  /** Cuts the file to {@code size} bytes, or grows it (with zeros) to that size. */
  void setSize(long size) throws IOException;

  /** Forces what was written to the device, and the size if it changed (as {@code fdatasync}). */
  void force() throws IOException;

  /**
   * A read-only view of the file's first {@code length} bytes that sees every later write to
   * them, valid until {@link #unmap}. The file must not grow past the length while mapped.
   */
  ByteBuffer map(long length) throws IOException;

  /** Ends a view from {@link #map}; nothing may read it afterwards. */
  void unmap(ByteBuffer view);

  /**
   * The alignment, in bytes, that the position, the length and the memory address of a {@link
   * #writeDirect} must keep; 0 if this file takes no direct writes (its device or file system
   * has none).
   */
  default int directAlignment() {
    return 0;
  }

  /**
   * Writes all of {@code src}'s remaining bytes at {@code position} past the page cache
   * ({@code O_DIRECT}), advancing {@code src}: position, length and the buffer's address are
   * multiples of {@link #directAlignment}. Visible to reads and mappings when it returns, as
   * {@link #write} is; on the device after the next {@link #force}, which also flushes the
   * device's own cache. Writes of the same bytes through {@link #write} and through this one may
   * be mixed, a page at a time: a page written one way is not written the other way while a write
   * of it is under way.
   *
   * @throws UnsupportedOperationException if {@link #directAlignment} is 0
   * @throws IllegalArgumentException if position, length or address is not aligned
   */
  default void writeDirect(ByteBuffer src, long position) throws IOException {
    throw new UnsupportedOperationException(path() + " takes no direct writes");
  }

  /**
   * Reads into {@code dst} from {@code position} until it is full or the file ends, past the page
   * cache ({@code O_DIRECT}) where the file takes direct IO: position, length and the buffer's
   * address are then multiples of {@link #directAlignment}. It sees every write that returned
   * before it, through either call; the pages it reads are not kept in the page cache. A file
   * without direct IO reads as {@link #read} does, which is the default.
   *
   * @return the bytes read
   * @throws IllegalArgumentException if position, length or address is not aligned
   */
  default int readDirect(ByteBuffer dst, long position) throws IOException {
    return read(dst, position);
  }
}
