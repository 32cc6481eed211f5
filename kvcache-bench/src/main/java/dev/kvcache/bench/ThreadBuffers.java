package dev.kvcache.bench;

import java.nio.ByteBuffer;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * Each benchmark thread's source and destination buffers, one block long (the benchmark's {@code
 * blockSizeBytes} parameter), and its position in the working set. Threads start at different
 * positions so that two threads do not copy the same block at the same time.
 */
@State(Scope.Thread)
public class ThreadBuffers {
  ByteBuffer src;
  ByteBuffer dst;
  private int next;

  @Setup(Level.Trial)
  public void setUp(BenchmarkParams params, ThreadParams thread) {
    int blockSizeBytes = Integer.parseInt(params.getParam("blockSizeBytes"));
    int seed = thread.getThreadIndex() + 1;
    src = Blocks.randomDirect(blockSizeBytes, seed);
    dst = ByteBuffer.allocateDirect(blockSizeBytes);
    next = seed * 7919;
  }

  /** The next block index in a working set of {@code n} blocks. */
  int nextIndex(int n) {
    next = next + 1 == Integer.MAX_VALUE ? 0 : next + 1;
    return next % n;
  }
}
