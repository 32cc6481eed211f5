package dev.kvcache.bench;

import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.CorruptBlockException;
import dev.kvcache.codec.Filter;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import net.jpountz.lz4.LZ4Compressor;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.lz4.LZ4SafeDecompressor;
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
 * The block codec against lz4-java's raw block API on the same bytes in the same run: a 4 MiB
 * block (real fp16 or bf16 KV tensors from {@code ../shared/data/kv/} when present, random bytes
 * otherwise) cut into chunks of {@code chunkSizeBytes}. {@code rawCompress}/{@code rawDecompress}
 * run LZ4 alone over the same chunks, already filtered (the filter is applied in set-up, untimed);
 * {@code rawCompressWithFilter}/{@code rawDecompressWithFilter} chain the filter and LZ4 by hand;
 * {@code encode}/{@code decode} add the container and the checksums to that, on {@code
 * codecThreads} threads (the calling thread plus a pool). The set-up prints the compression ratio
 * of each configuration.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class CodecBenchmark {

  private static final int BLOCK_BYTES = 4 << 20;

  @Param({"65536", "262144", "1048576", "4194304"})
  public int chunkSizeBytes;

  @Param({"kv_prose_fp16", "kv_prose_bf16", "random"})
  public String data;

  @Param({"NONE", "BYTE_SHUFFLE_2", "BIT_SHUFFLE_2"})
  public Filter filter;

  /** Threads that encode and decode one block's chunks (the raw LZ4 baselines use one). */
  @Param({"1", "2"})
  public int codecThreads;

  /** Where the shared KV tensors are, relative to the working directory. */
  @Param({"../shared/data/kv"})
  public String dataDir;

  private final LZ4Factory lz4 = LZ4Factory.fastestInstance();
  private final LZ4Compressor compressor = lz4.fastCompressor();
  private final LZ4SafeDecompressor decompressor = lz4.safeDecompressor();
  private BlockCodec codec;
  private ByteBuffer block;
  /** What raw LZ4 is given: the block, filtered chunk by chunk as the codec filters it. */
  private ByteBuffer rawInput;
  private ByteBuffer encoded;
  private ByteBuffer encodeTarget;
  private ByteBuffer decoded;
  private ByteBuffer rawCompressed;
  private int[] rawChunkLengths;
  private ExecutorService pool;
  private byte[] plain;
  private byte[] scratch;
  private ByteBuffer plainView;
  private ByteBuffer scratchView;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    block = Blocks.kvTensors(dataDir, data, BLOCK_BYTES);
    pool = Executors.newFixedThreadPool(Math.max(1, codecThreads - 1));
    BlockCodec.Builder builder = BlockCodec.builder().chunkSizeBytes(chunkSizeBytes).filter(filter);
    codec = (codecThreads > 1 ? builder.executor(pool, codecThreads) : builder).build();
    encoded = ByteBuffer.allocateDirect((int) codec.maxEncodedLength(BLOCK_BYTES));
    codec.encode(block, encoded);
    encoded.flip();
    encodeTarget = ByteBuffer.allocateDirect(encoded.capacity());
    decoded = ByteBuffer.allocateDirect(BLOCK_BYTES);
    int chunks = (BLOCK_BYTES + chunkSizeBytes - 1) / chunkSizeBytes;
    rawCompressed = ByteBuffer.allocateDirect(chunks * compressor.maxCompressedLength(chunkSizeBytes));
    rawChunkLengths = new int[chunks];
    rawInput = Blocks.filtered(block, filter, chunkSizeBytes);
    plain = new byte[chunkSizeBytes];
    scratch = new byte[chunkSizeBytes];
    plainView = ByteBuffer.wrap(plain);
    scratchView = ByteBuffer.wrap(scratch);
    rawCompress();
    long rawTotal = 0;
    for (int n : rawChunkLengths) {
      rawTotal += n;
    }
    System.out.printf(
        "%nratio: data=%s filter=%s chunk=%d container=%.4f rawLz4=%.4f%n",
        data, filter, chunkSizeBytes, (double) BLOCK_BYTES / encoded.remaining(),
        (double) BLOCK_BYTES / rawTotal);
  }

  @Benchmark
  public int rawCompress() {
    int out = 0;
    for (int i = 0, in = 0; in < BLOCK_BYTES; i++, in += chunkSizeBytes) {
      int len = Math.min(chunkSizeBytes, BLOCK_BYTES - in);
      int max = compressor.maxCompressedLength(len);
      int n = compressor.compress(rawInput, in, len, rawCompressed, out, max);
      rawChunkLengths[i] = n;
      out += n;
    }
    return out;
  }

  @Benchmark
  public int rawDecompress() {
    int in = 0;
    int out = 0;
    for (int n : rawChunkLengths) {
      out += decompressor.decompress(rawCompressed, in, n, decoded, out, chunkSizeBytes);
      in += n;
    }
    return out;
  }

  /**
   * The filter and raw LZ4 chained by hand, chunk by chunk through heap arrays as the codec does:
   * the codec minus its container and checksums. Without a filter, the same as {@link
   * #rawCompress}.
   */
  @Benchmark
  public int rawCompressWithFilter() {
    if (filter == Filter.NONE) {
      return rawCompress();
    }
    int out = 0;
    for (int i = 0, in = 0; in < BLOCK_BYTES; i++, in += chunkSizeBytes) {
      int len = Math.min(chunkSizeBytes, BLOCK_BYTES - in);
      block.get(in, plain, 0, len);
      byte[] filtered = filter.apply(plain, len, scratch);
      int n = compressor.compress(
          filtered == plain ? plainView : scratchView, 0, len, rawCompressed, out,
          compressor.maxCompressedLength(len));
      out += n;
    }
    return out;
  }

  /** The inverse of {@link #rawCompressWithFilter}, into the same destination as {@link #decode}. */
  @Benchmark
  public int rawDecompressWithFilter() {
    if (filter == Filter.NONE) {
      return rawDecompress();
    }
    int in = 0;
    int out = 0;
    for (int n : rawChunkLengths) {
      int len = Math.min(chunkSizeBytes, BLOCK_BYTES - out);
      decompressor.decompress(rawCompressed, in, n, plainView, 0, len);
      decoded.put(out, filter.remove(plain, len, scratch), 0, len);
      in += n;
      out += len;
    }
    return out;
  }

  @Benchmark
  public int encode() {
    return codec.encode(block, encodeTarget.clear());
  }

  @Benchmark
  public ByteBuffer decode() throws CorruptBlockException {
    BlockCodec.decode(encoded.duplicate(), decoded.clear(), pool, codecThreads);
    return decoded;
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    pool.shutdownNow();
  }
}
