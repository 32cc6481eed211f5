package dev.kvcache.bench.peers;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteOptions;

/**
 * RocksDB with BlobDB, its configuration for large values: every value goes to a blob file and
 * the LSM tree holds only references. Default write options (the write-ahead log on, no sync per
 * write), and the direct-buffer {@code put}/{@code get} calls, which read into the caller's buffer.
 */
final class RocksDbStore implements PeerStore {
  static {
    RocksDB.loadLibrary();
  }

  private final Options options;
  private final RocksDB db;
  private final WriteOptions writeOptions = new WriteOptions();
  private final ReadOptions readOptions = new ReadOptions();
  private final ByteBuffer key = ByteBuffer.allocateDirect(8);

  RocksDbStore(Path dir) {
    options = new Options().setCreateIfMissing(true).setEnableBlobFiles(true).setMinBlobSize(0)
        .setBlobFileSize(256L << 20).setEnableBlobGarbageCollection(true)
        .setWriteBufferSize(64L << 20);
    try {
      db = RocksDB.open(options, dir.toString());
    } catch (RocksDBException e) {
      throw new IllegalStateException("cannot open RocksDB in " + dir, e);
    }
  }

  private ByteBuffer key(long id) {
    return key.clear().putLong(0, id).limit(8);
  }

  @Override
  public boolean put(long id, ByteBuffer src) {
    try {
      db.put(writeOptions, key(id), src.duplicate());
      return true;
    } catch (RocksDBException e) {
      return false;
    }
  }

  @Override
  public boolean getInto(long id, ByteBuffer dst) {
    dst.clear();
    try {
      int n = db.get(readOptions, key(id), dst);
      if (n == RocksDB.NOT_FOUND) {
        return false;
      }
      dst.position(Math.min(n, dst.capacity()));
      return true;
    } catch (RocksDBException e) {
      return false;
    }
  }

  @Override
  public void close() {
    db.close();
    options.close();
    writeOptions.close();
    readOptions.close();
  }
}
