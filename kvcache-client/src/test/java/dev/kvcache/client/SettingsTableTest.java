package dev.kvcache.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.s3.S3TierConfig;
import dev.kvcache.server.ServerSettings;
import dev.kvcache.spi.TierSettings;
import dev.kvcache.tiered.KvCacheConfig;
import dev.kvcache.tiered.StackedTierConfig;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@code docs/settings.md}, the one table of the cache's settings, embedded and in the server,
 * against the code. It lives with the client's tests because this module sees every reader of
 * settings: the core's, the disk, object and remote tiers' factories, and the server's.
 */
class SettingsTableTest {

  private static final Path REPO = Path.of("..");
  private static final Pattern ROW = Pattern.compile(
      "^\\| `([a-z0-9.-]+)` \\| (?:`([a-z0-9.-]+)`|\\u2014) \\|([^|]*)\\|([^|]*)\\|");
  /** A key a reader of settings reads, by the accessor it calls. */
  private static final Pattern READ = Pattern.compile(
      "settings\\.(?:string|bytes|intBytes|integer|bool|duration|choice|has)\\(\"([a-z-]+)\"");
  /** The keys the core's parser reads itself, as literals. */
  private static final Pattern READ_BY_CONFIG = Pattern.compile("\"(ram\\.[a-z-]+|lower)\"");

  private record Row(String embedded, String server, String embeddedDefault,
      String serverDefault) {}

  private static Map<String, Row> rows() throws IOException {
    Map<String, Row> rows = new TreeMap<>();
    for (String line : Files.readAllLines(REPO.resolve("docs/settings.md"))) {
      Matcher m = ROW.matcher(line);
      if (m.find()) {
        Row row = new Row(m.group(1), m.group(2), m.group(3).strip(), m.group(4).strip());
        assertThat(rows.put(row.embedded(), row)).as("one row for " + row.embedded()).isNull();
      }
    }
    assertThat(rows).as("rows of docs/settings.md").hasSizeGreaterThan(50);
    return rows;
  }

  private static Set<String> read(String source, Pattern pattern, String prefix)
      throws IOException {
    Set<String> keys = new TreeSet<>();
    Matcher m = pattern.matcher(Files.readString(REPO.resolve(source), StandardCharsets.UTF_8));
    while (m.find()) {
      keys.add(prefix + m.group(1));
    }
    return keys;
  }

  /** The keys the embedded readers read, each under the group its tier is given. */
  private static Set<String> embeddedInCode() throws IOException {
    Set<String> keys = new TreeSet<>();
    keys.addAll(read("kvcache-core/src/main/java/dev/kvcache/tiered/KvCacheConfig.java",
        READ_BY_CONFIG, ""));
    keys.addAll(read("kvcache-core/src/main/java/dev/kvcache/tiered/TieredCacheConfig.java",
        READ, "tiered."));
    keys.addAll(read("kvcache-core/src/main/java/dev/kvcache/tiered/StackedTierConfig.java",
        READ, "stacked."));
    keys.addAll(read("kvcache-disk/src/main/java/dev/kvcache/disk/DiskTierFactory.java",
        READ, "disk."));
    keys.addAll(read("kvcache-s3/src/main/java/dev/kvcache/s3/S3TierFactory.java", READ, "s3."));
    keys.addAll(read("kvcache-client/src/main/java/dev/kvcache/client/RemoteTierFactory.java",
        READ, "remote."));
    return keys;
  }

  /**
   * The server's cache settings: its own, and the object tier's and the uploads' under {@code
   * kvcache.cache.s3.}, which it passes on as they are.
   */
  private static Set<String> serverInCode(Map<String, String> server) throws IOException {
    Set<String> keys = new TreeSet<>();
    server.keySet().stream().filter(k -> k.startsWith("kvcache.cache.")).forEach(keys::add);
    keys.addAll(read("kvcache-s3/src/main/java/dev/kvcache/s3/S3TierFactory.java", READ,
        "kvcache.cache.s3."));
    keys.addAll(read("kvcache-core/src/main/java/dev/kvcache/tiered/StackedTierConfig.java",
        READ, "kvcache.cache.s3."));
    return keys;
  }

  @Test
  void everySettingTheReadersReadIsARowAndEveryRowOneTheyRead() throws IOException {
    Map<String, Row> rows = rows();
    assertThat(rows.keySet()).as("the embedded keys").isEqualTo(embeddedInCode());
    Set<String> server = new TreeSet<>();
    rows.values().stream().filter(r -> r.server() != null).forEach(r -> server.add(r.server()));
    assertThat(server).as("the server's settings")
        .isEqualTo(serverInCode(ServerSettings.inCode(REPO.resolve("kvcache-server"))));
  }

  @Test
  void aDefaultGivenAsAValueIsTheCodes() throws Exception {
    Map<String, Row> rows = rows();
    Map<String, String> server = ServerSettings.inCode(REPO.resolve("kvcache-server"));
    Map<String, String> given = new HashMap<>();
    for (Row row : rows.values()) {
      String embedded = literal(row.embeddedDefault());
      if (embedded != null) {
        given.put(row.embedded(), embedded);
      }
      String serverDefault = literal(row.serverDefault());
      String serverCode = row.server() == null ? null : server.get(row.server());
      if (serverCode != null && !serverCode.isEmpty()) {
        assertThat(serverDefault).as("the server's default of " + row.server()
            + ", given as a value").isEqualTo(serverCode);
      } else if (serverDefault != null) {
        // passed on to the tier as it is: the tier's own default
        assertThat(serverDefault).as("the default of " + row.server()).isEqualTo(embedded);
      }
    }
    // the core's own: the documented values read as nothing given at all
    Map<String, String> core = new HashMap<>();
    given.forEach((key, value) -> {
      if (key.startsWith("ram.") || key.startsWith("tiered.") || key.equals("lower")) {
        core.put(key, value);
      }
    });
    KvCacheConfig documented = KvCacheConfig.of(core);
    KvCacheConfig applied = KvCacheConfig.of(Map.of());
    assertThat(documented.ramBytes()).as("ram.bytes").isEqualTo(applied.ramBytes());
    assertThat(documented.ramPolicy()).as("ram.policy").isEqualTo(applied.ramPolicy());
    assertThat(documented.lower()).as("lower").isEqualTo(applied.lower());
    assertThat(documented.tiered()).as("tiered.*").isEqualTo(applied.tiered());
    Map<String, String> stacked = new HashMap<>();
    given.forEach((key, value) -> {
      if (key.startsWith("stacked.")) {
        stacked.put(key.substring("stacked.".length()), value);
      }
    });
    assertThat(StackedTierConfig.read(TierSettings.of(stacked))).as("stacked.*")
        .isEqualTo(StackedTierConfig.defaults());
    // the tiers': each documented value against the default their configurations take
    Map<String, Function<TierSettings, Object>> documentedValue = new HashMap<>();
    Map<String, Object> inCode = tierDefaults(documentedValue);
    given.forEach((key, value) -> {
      if (key.startsWith("disk.") || key.startsWith("s3.") || key.startsWith("remote.")) {
        assertThat(inCode).as("a default in the code to hold " + key + "'s against")
            .containsKey(key);
        Object read = documentedValue.get(key).apply(TierSettings.of(Map.of("v", value)));
        assertThat(read).as("the default of " + key).isEqualTo(inCode.get(key));
      }
    });
  }

  /** A default given as a value ({@code `x`}), or null for one given in words. */
  private static String literal(String cell) {
    return cell.matches("`[^`]+`") ? cell.substring(1, cell.length() - 1) : null;
  }

  /**
   * The defaults the tiers' configurations take, by key, and in {@code documentedValue} how to read
   * a documented one in the same form.
   */
  private static Map<String, Object> tierDefaults(
      Map<String, Function<TierSettings, Object>> documentedValue) throws Exception {
    Map<String, Object> code = new HashMap<>();
    Function<TierSettings, Object> bytes = s -> s.bytes("v");
    Function<TierSettings, Object> duration = s -> s.duration("v", null);
    Function<TierSettings, Object> bool = s -> s.bool("v", false);
    Function<TierSettings, Object> integer = s -> s.integer("v", 0);
    Function<TierSettings, Object> text = s -> s.string("v").toLowerCase(Locale.ROOT);

    DiskTierConfig disk = DiskTierConfig.builder(Path.of("unused"), 1L << 40).build();
    put(code, documentedValue, "disk.super-block", disk.superBlockBytes(), bytes);
    put(code, documentedValue, "disk.sync-policy", name(disk.syncPolicy()), text);
    put(code, documentedValue, "disk.sync-interval",
        java.time.Duration.ofMillis(disk.syncIntervalMillis()), duration);
    put(code, documentedValue, "disk.reclaim-rate", disk.reclaimBytesPerSecond(), bytes);
    put(code, documentedValue, "disk.scrub-rate", disk.scrubBytesPerSecond(), bytes);
    put(code, documentedValue, "disk.direct-writes", disk.directWrites(), bool);
    put(code, documentedValue, "disk.direct-reads", disk.directReads(), bool);
    put(code, documentedValue, "disk.admission", name(disk.admission()), text);
    put(code, documentedValue, "disk.codec", disk.codec() == null ? "none" : "lz4", text);
    put(code, documentedValue, "disk.codec-filter",
        disk.codec() == null ? "none" : name(disk.codec().filter()), text);

    S3TierConfig s3 = S3TierConfig.builder("kvcache", 1L << 30).build();
    put(code, documentedValue, "s3.prefix", s3.prefix(), s -> s.string("v"));
    put(code, documentedValue, "s3.region", s3.region(), s -> s.string("v"));
    put(code, documentedValue, "s3.addressing", name((Enum<?>) field(s3, "addressing")), text);
    put(code, documentedValue, "s3.http-client", name(s3.httpClient()), text);
    put(code, documentedValue, "s3.concurrency", s3.concurrency(), integer);
    put(code, documentedValue, "s3.connect-timeout", s3.connectTimeout(), duration);
    put(code, documentedValue, "s3.request-timeout", s3.requestTimeout(), duration);
    put(code, documentedValue, "s3.lookup-budget", s3.lookupBudget(), duration);
    put(code, documentedValue, "s3.list-interval", s3.listInterval(), duration);
    put(code, documentedValue, "s3.index-entries", s3.indexEntries(), integer);
    put(code, documentedValue, "s3.allow-plain-http", s3.allowPlainHttp(), bool);

    RemoteTierConfig.Builder remoteBuilder = RemoteTierConfig.builder().server("127.0.0.1", 1);
    boolean cleartextToken = (Boolean) field(remoteBuilder, "cleartextToken");
    RemoteTierConfig remote = remoteBuilder.build();
    put(code, documentedValue, "remote.namespace", remote.namespace, s -> s.string("v"));
    put(code, documentedValue, "remote.tls", remote.tls, bool);
    put(code, documentedValue, "remote.allow-cleartext-token", cleartextToken, bool);
    put(code, documentedValue, "remote.connect-timeout", remote.connectTimeout, duration);
    put(code, documentedValue, "remote.request-timeout", remote.requestTimeout, duration);
    put(code, documentedValue, "remote.connections-per-server", remote.connectionsPerServer,
        integer);
    put(code, documentedValue, "remote.wire-codec", remote.wireCodec == null ? "none" : "lz4",
        text);
    put(code, documentedValue, "remote.wire-codec-filter",
        remote.wireCodec == null ? "none" : name(remote.wireCodec.filter()), text);
    return code;
  }

  private static void put(Map<String, Object> code,
      Map<String, Function<TierSettings, Object>> documentedValue, String key, Object value,
      Function<TierSettings, Object> read) {
    code.put(key, value);
    documentedValue.put(key, read);
  }

  private static String name(Enum<?> e) {
    return e.name().toLowerCase(Locale.ROOT);
  }

  private static Object field(Object owner, String name) throws ReflectiveOperationException {
    Field f = owner.getClass().getDeclaredField(name);
    f.setAccessible(true);
    return f.get(owner);
  }
}
