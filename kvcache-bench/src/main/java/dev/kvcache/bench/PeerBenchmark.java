package dev.kvcache.bench;

import dev.kvcache.bench.peers.PeerStore;
import java.nio.ByteBuffer;
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
 * kvcache's RAM tier beside the off-heap stores a JVM user would pick instead (Ehcache 3
 * off-heap, OHC, Chronicle Map), moving the same blocks between the same direct buffers: put from
 * a direct source buffer, get into a direct destination buffer. See {@link PeerStore} for how each
 * library is driven.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class PeerBenchmark {

  @Param({"kvcache", "ehcache", "ohc", "chronicle-map"})
  public String peer;

  @Param({"1048576", "4194304", "33554432"})
  public int blockSizeBytes;

  @Param({"268435456"})
  public long workingSetBytes;

  private PeerStore store;
  private int blocks;

  @Setup(Level.Trial)
  public void setUp() {
    blocks = Blocks.blocksIn(workingSetBytes, blockSizeBytes);
    // Room for the working set plus slack for replacements: every store gets the same budget.
    long capacity = 2L * blocks * blockSizeBytes;
    store = PeerStore.create(peer, capacity, blockSizeBytes, blocks);
    ByteBuffer src = Blocks.randomDirect(blockSizeBytes, 42);
    ByteBuffer check = ByteBuffer.allocateDirect(blockSizeBytes);
    for (int i = 0; i < blocks; i++) {
      if (!store.put(i, src)) {
        throw new IllegalStateException(peer + " refused block " + i + " of " + blocks);
      }
    }
    for (int i = 0; i < blocks; i++) {
      if (!store.getInto(i, check) || !check.flip().equals(src)) {
        throw new IllegalStateException(peer + " lost or changed block " + i);
      }
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    store.close();
  }

  @Benchmark
  public boolean put(ThreadBuffers t) {
    return store.put(t.nextIndex(blocks), t.src);
  }

  @Benchmark
  public boolean get(ThreadBuffers t) {
    return store.getInto(t.nextIndex(blocks), t.dst);
  }
}
