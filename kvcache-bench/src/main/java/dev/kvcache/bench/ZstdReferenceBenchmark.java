package dev.kvcache.bench;

import com.github.luben.zstd.Zstd;
import dev.kvcache.codec.Filter;
import java.io.IOException;
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

/**
 * zstd (zstd-jni) on the same chunks as {@link CodecBenchmark}, as a reference point for what a
 * slower, stronger compressor gains on KV tensors: the set-up prints the ratio, the benchmarks
 * time compressing and decompressing one 4 MiB block chunk by chunk (filter applied untimed).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class ZstdReferenceBenchmark {

  private static final int BLOCK_BYTES = 4 << 20;

  @Param({"1", "3"})
  public int level;

  @Param({"262144"})
  public int chunkSizeBytes;

  @Param({"kv_prose_fp16", "kv_prose_bf16"})
  public String data;

  @Param({"NONE", "BYTE_SHUFFLE_2"})
  public Filter filter;

  @Param({"../shared/data/kv"})
  public String dataDir;

  private ByteBuffer input;
  private ByteBuffer compressed;
  private ByteBuffer decompressed;
  private int[] lengths;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    ByteBuffer block = Blocks.kvTensors(dataDir, data, BLOCK_BYTES);
    input = Blocks.filtered(block, filter, chunkSizeBytes);
    int chunks = (BLOCK_BYTES + chunkSizeBytes - 1) / chunkSizeBytes;
    compressed = ByteBuffer.allocateDirect(chunks * (int) Zstd.compressBound(chunkSizeBytes));
    decompressed = ByteBuffer.allocateDirect(BLOCK_BYTES);
    lengths = new int[chunks];
    long total = compress();
    System.out.printf("%nzstd ratio: data=%s filter=%s level=%d chunk=%d ratio=%.4f%n",
        data, filter, level, chunkSizeBytes, (double) BLOCK_BYTES / total);
  }

  @Benchmark
  public long compress() {
    long out = 0;
    int bound = (int) Zstd.compressBound(chunkSizeBytes);
    for (int i = 0, in = 0; in < BLOCK_BYTES; i++, in += chunkSizeBytes) {
      int len = Math.min(chunkSizeBytes, BLOCK_BYTES - in);
      ByteBuffer dst = compressed.duplicate().position(i * bound).limit(i * bound + bound);
      ByteBuffer src = input.duplicate().position(in).limit(in + len);
      lengths[i] = Zstd.compress(dst, src, level);
      out += lengths[i];
    }
    return out;
  }

  @Benchmark
  public long decompress() {
    long out = 0;
    int bound = (int) Zstd.compressBound(chunkSizeBytes);
    for (int i = 0; i < lengths.length; i++) {
      ByteBuffer src = compressed.duplicate().position(i * bound).limit(i * bound + lengths[i]);
      ByteBuffer dst = decompressed.duplicate().position(i * chunkSizeBytes)
          .limit(Math.min(BLOCK_BYTES, (i + 1) * chunkSizeBytes));
      out += Zstd.decompress(dst, src);
    }
    return out;
  }
}
