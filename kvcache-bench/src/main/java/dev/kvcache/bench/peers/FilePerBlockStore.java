package dev.kvcache.bench.peers;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A directory with one file per block, named by its id, as LMCache's local disk backend and
 * vLLM's file tier store blocks: a put writes the whole file (no sync), a get reads it whole
 * into the caller's buffer.
 */
final class FilePerBlockStore implements PeerStore {
  private final Path dir;

  FilePerBlockStore(Path dir) {
    this.dir = dir;
  }

  private Path file(long id) {
    return dir.resolve(Long.toHexString(id) + ".kv");
  }

  @Override
  public boolean put(long id, ByteBuffer src) {
    try (FileChannel ch = FileChannel.open(file(id), StandardOpenOption.CREATE,
        StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
      ByteBuffer b = src.duplicate();
      while (b.hasRemaining()) {
        ch.write(b);
      }
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  @Override
  public boolean getInto(long id, ByteBuffer dst) {
    dst.clear();
    try (FileChannel ch = FileChannel.open(file(id), StandardOpenOption.READ)) {
      while (dst.hasRemaining() && ch.read(dst) >= 0) {
        // fill
      }
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  @Override
  public void close() {}
}
