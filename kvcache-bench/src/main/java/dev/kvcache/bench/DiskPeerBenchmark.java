package dev.kvcache.bench;

import dev.kvcache.bench.peers.PeerStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * kvcache's disk tier beside the disk stores a user would pick instead, on the work tree's disk:
 * RocksDB with blob files, Ehcache 3's disk tier, and a directory with a file per block. The set-up
 * stores a working set of blocks (and checks they read back); {@code put} replaces blocks of the
 * working set in turn, each with new content, and {@code get} copies them into a direct buffer.
 * Every store gets twice the working set as capacity (Ehcache twice that: with less it evicts
 * blocks of the working set), and none forces writes to the device.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class DiskPeerBenchmark {

  @Param({"kvcache", "rocksdb", "ehcache", "files"})
  public String store;

  @Param({"262144", "2097152"})
  public int blockSizeBytes;

  @Param({"536870912"})
  public long workingSetBytes;

  /** Where the stores' files go; the work tree's disk by default. */
  @Param({"target/disk-peers"})
  public String baseDir;

  private Path base;
  private PeerStore peer;
  private ByteBuffer src;
  private ByteBuffer dst;
  private int blocks;
  private int next;
  private long counter;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    base = Path.of(baseDir).toAbsolutePath();
    Blocks.deleteTree(base);
    Files.createDirectories(base.resolve(store));
    blocks = Blocks.blocksIn(workingSetBytes, blockSizeBytes);
    peer = PeerStore.createOnDisk(store, base.resolve(store), 2 * workingSetBytes, blockSizeBytes);
    src = Blocks.randomDirect(blockSizeBytes, 17);
    dst = ByteBuffer.allocateDirect(blockSizeBytes);
    for (int i = 0; i < blocks; i++) {
      src.putLong(0, i);
      if (!peer.put(i, src)) {
        throw new IllegalStateException(store + " refused block " + i + " of " + blocks);
      }
    }
    for (int i = 0; i < blocks; i++) {
      src.putLong(0, i);
      if (!peer.getInto(i, dst) || !dst.flip().equals(src)) {
        throw new IllegalStateException(store + " lost or changed block " + i);
      }
    }
    counter = blocks;
  }

  private int nextBlock() {
    int i = next;
    next = i + 1 == blocks ? 0 : i + 1;
    return i;
  }

  @Benchmark
  public boolean put() {
    src.putLong(0, counter++); // new content: kvcache would skip rewriting an unchanged block
    return peer.put(nextBlock(), src);
  }

  @Benchmark
  public boolean get() {
    return peer.getInto(nextBlock(), dst);
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    peer.close();
    Blocks.deleteTree(base);
  }
}
