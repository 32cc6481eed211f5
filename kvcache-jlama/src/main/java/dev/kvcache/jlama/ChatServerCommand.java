package dev.kvcache.jlama;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import dev.kvcache.KvCache;
import java.io.File;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.function.Function;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code bin/kvcache-jlama-chat}: serves a Jlama model with kvcache's prefix cache as an
 * OpenAI-compatible chat server ({@link ChatServer}), until it is stopped.
 */
@Command(name = "kvcache-jlama-chat", mixinStandardHelpOptions = true,
    description = "Serves a Jlama model (a directory of safetensors weights, config.json and "
        + "tokenizer.json) as an OpenAI-compatible chat server whose conversations load the keys "
        + "and values of their earlier turns from kvcache.")
public final class ChatServerCommand implements Callable<Integer> {

  @Option(names = "--model", required = true, description = "the model's directory")
  File model;

  @Option(names = "--name", description = "the model's name to clients and in the cache's "
      + "namespace; it must tell the weights apart (default: the directory's name)")
  String name;

  @Option(names = "--host", defaultValue = "127.0.0.1", description = "default: ${DEFAULT-VALUE}")
  String host;

  @Option(names = "--port", defaultValue = "8080", description = "0: any free port "
      + "(default: ${DEFAULT-VALUE})")
  int port;

  @Option(names = "--working-dtype", defaultValue = "F32", description = "the dtype the model "
      + "computes and keeps its keys and values in: F32 or BF16 (default: ${DEFAULT-VALUE})")
  DType workingDType;

  @Option(names = "--server", description = "host:port of kvcache-server (several, "
      + "comma-separated); without one, an embedded RAM cache (kvcache.server)")
  String server;

  @Option(names = "--namespace", description = "the server's namespace (kvcache.namespace)")
  String namespace;

  @Option(names = "--token", description = "the server's bearer token (kvcache.token)")
  String token;

  @Option(names = "--ram-bytes", description = "the embedded cache's RAM, as 512MiB or 4GiB "
      + "(kvcache.ram-bytes; default 1GiB)")
  String ramBytes;

  @Option(names = "--block-tokens", description = "tokens per block (kvcache.block-tokens; "
      + "default 32)")
  Integer blockTokens;

  public static void main(String[] args) {
    System.exit(new CommandLine(new ChatServerCommand()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    Map<String, String> options = new HashMap<>();
    putIfSet(options, "kvcache.server", server);
    putIfSet(options, "kvcache.namespace", namespace);
    putIfSet(options, "kvcache.token", token);
    putIfSet(options, "kvcache.ram-bytes", ramBytes);
    if (blockTokens != null) {
      options.put("kvcache.block-tokens", blockTokens.toString());
    }
    // the options given, else the system properties and environment
    Function<String, String> settings = setting -> options.containsKey(setting)
        ? options.get(setting) : CacheSettings.setting(setting);
    String modelName = name != null ? name : model.getName();
    System.out.println("loading " + model + " ...");
    AbstractModel loaded = ModelSupport.loadModel(model, workingDType, workingDType);
    try (KvCache cache = CacheSettings.open(settings);
        ChatServer chat = ChatServer.start(new CachedGenerator(new PrefixCache(loaded, cache,
            modelName, CacheSettings.blockTokens(settings))), modelName, host, port)) {
      System.out.println("kvcache-jlama-chat listening on http://" + host + ":" + chat.port()
          + "/v1 (model " + modelName + ", cache: "
          + (settings.apply("kvcache.server") != null ? "kvcache-server" : "embedded RAM") + ")");
      CountDownLatch stopped = new CountDownLatch(1);
      Runtime.getRuntime().addShutdownHook(new Thread(stopped::countDown));
      stopped.await();
    } finally {
      loaded.close();
    }
    return 0;
  }

  private static void putIfSet(Map<String, String> options, String name, String value) {
    if (value != null) {
      options.put(name, value);
    }
  }
}
