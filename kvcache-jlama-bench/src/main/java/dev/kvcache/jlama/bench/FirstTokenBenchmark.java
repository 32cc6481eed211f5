package dev.kvcache.jlama.bench;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import dev.kvcache.KvCache;
import dev.kvcache.client.RemoteTier;
import dev.kvcache.client.RemoteTierConfig;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import dev.kvcache.jlama.LoadOrPrefill;
import dev.kvcache.jlama.Prefill;
import dev.kvcache.jlama.PrefixCache;
import dev.kvcache.jlama.TestModels;
import dev.kvcache.tiered.KvCacheBuilder;
import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Time to first token of a Jlama model (random weights: {@link #SHAPE}, F32) for a prompt of
 * {@code promptTokens} tokens: its keys and values computed ({@code computed}, the baseline), or
 * its whole blocks loaded from kvcache and only the tokens after them and the last token computed
 * ({@code ram}: the
 * embedded RAM tier; {@code disk}: the disk tier, closed, the page cache dropped and the tier
 * opened again before each first token unless {@code -p dropPageCache=false} (dropping needs
 * root); {@code server}: a kvcache-server in a
 * process of its own, its jar at {@code -Dkvcache.server.jar}, default {@code
 * kvcache-server/target/kvcache-server.jar}). One first token per measurement
 * (single-shot), the model's forward pass on every core Jlama is given.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2)
@Measurement(iterations = 5)
@Fork(value = 2, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector",
    "--enable-native-access=ALL-UNNAMED", "-Xmx6g", "-XX:MaxDirectMemorySize=4g"})
@State(Scope.Benchmark)
public class FirstTokenBenchmark {

  /** 4 layers of 512, 8 heads of 64, 4 key-value heads, MLP of 1408: 12.7M parameters. */
  static final TestModels.Shape SHAPE = new TestModels.Shape(4, 512, 8, 4, 1408, 8192 + 64);
  static final int BLOCK_TOKENS = 32;

  @Param({"2000", "8000"})
  public int promptTokens;

  @Param({"computed", "ram", "disk", "server"})
  public String source;

  @Param("true")
  public boolean dropPageCache;

  private Path dir;
  private AbstractModel model;
  private KvCache cache;
  private Process server;
  private PrefixCache prefixes;
  private KvBufferCache buffers;
  private int[] prompt;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    dir = Files.createTempDirectory("kvcache-jlama-bench");
    File files = TestModels.llama(dir.resolve("model"), SHAPE, 11).toFile();
    model = ModelSupport.loadModel(files, DType.F32, DType.F32);
    buffers = new KvBufferCache(model);
    SplittableRandom random = new SplittableRandom(promptTokens);
    prompt = new int[promptTokens];
    for (int i = 0; i < prompt.length; i++) {
      prompt[i] = 3 + random.nextInt(TestModels.VOCABULARY - 3); // no special token
    }
    cache = switch (source) {
      case "computed", "ram" -> KvCacheBuilder.newBuilder().ramBytes(512L << 20).build();
      case "disk" -> DiskTier.open(diskConfig());
      case "server" -> remote();
      default -> throw new IllegalArgumentException("source is computed, ram, disk or server, "
          + "not " + source);
    };
    prefixes = prefixCache();
    if (!source.equals("computed")) {
      try (KvBufferCache.KvBuffer kv = buffers.getEphemeralKvBuffer()) {
        prefixes.prefill(prompt, kv).output().close();
        int stored = prefixes.store(prompt, kv, 0);
        if (stored != prompt.length / BLOCK_TOKENS) {
          throw new IllegalStateException(stored + " blocks stored, not "
              + prompt.length / BLOCK_TOKENS);
        }
      }
    }
  }

  private DiskTierConfig diskConfig() {
    return DiskTierConfig.builder(dir.resolve("disk"), 1L << 30).minFreeBytes(0)
        .syncPolicy(SyncPolicy.NONE).build();
  }

  private PrefixCache prefixCache() {
    return new PrefixCache(model, cache, "bench-" + SHAPE, BLOCK_TOKENS,
        LoadOrPrefill.alwaysLoad());
  }

  private KvCache remote() throws IOException {
    String jar = System.getProperty("kvcache.server.jar",
        "kvcache-server/target/kvcache-server.jar");
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    // the benchmark's own java (JDK 22 or newer), with the flags bin/jdk-flags gives it
    List<String> command = new ArrayList<>(List.of(
        ProcessHandle.current().info().command().orElse("java"), "-XX:MaxDirectMemorySize=2g"));
    if (Runtime.version().feature() >= 24) {
      command.addAll(List.of("--enable-native-access=ALL-UNNAMED",
          "--sun-misc-unsafe-memory-access=allow"));
    }
    command.addAll(List.of("-Dmicronaut.server.port=" + port,
        "-Dmicronaut.server.host=127.0.0.1", "-Dkvcache.s3.enabled=false",
        "-Dkvcache.cache.ram-bytes=1GiB", "-Dkvcache.cache.disk-dir=", "-jar", jar));
    server = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(dir.resolve("server.log").toFile()).start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (true) {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 200);
        break;
      } catch (IOException notYet) {
        if (!server.isAlive() || System.nanoTime() > deadline) {
          throw new IOException("kvcache-server did not start; see " + dir.resolve("server.log"));
        }
      }
    }
    return new RemoteTier(RemoteTierConfig.builder().server("127.0.0.1", port).build());
  }

  /**
   * For {@code disk}: the tier closed (a mapped page stays in the page cache while it is mapped),
   * the page cache dropped, and the tier opened again over its files, before each first token.
   */
  @Setup(Level.Invocation)
  public void dropPageCache() throws IOException {
    if (source.equals("disk") && dropPageCache) {
      Path drop = Path.of("/proc/sys/vm/drop_caches");
      if (!Files.isWritable(drop)) {
        throw new IllegalStateException("cannot write " + drop + " to drop the page cache: run "
            + "as root, or with -p dropPageCache=false for warm reads");
      }
      cache.close();
      Files.writeString(drop, "1");
      cache = DiskTier.open(diskConfig());
      prefixes = prefixCache();
    }
  }

  /** The prompt's keys and values, loaded or computed, then the first token sampled. */
  @Benchmark
  public int firstToken() {
    try (KvBufferCache.KvBuffer kv = buffers.getEphemeralKvBuffer();
        AbstractTensor logits = model.makeDenseTensor(model.getConfig().vocabularySize)) {
      Prefill p = prefixes.prefill(prompt, kv);
      int loaded = source.equals("computed") ? 0
          : Math.min(prompt.length / BLOCK_TOKENS * BLOCK_TOKENS, prompt.length - 1);
      if (p.loadedTokens() != loaded) {
        throw new IllegalStateException(p.loadedTokens() + " tokens loaded, not " + loaded);
      }
      try (AbstractTensor out = p.output()) {
        return model.sample(out.slice(out.shape().first() - 1), 0f, 0f, logits);
      }
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    cache.close();
    if (server != null) {
      server.destroy();
    }
    model.close();
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    }
  }
}
