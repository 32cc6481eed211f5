package dev.kvcache.disk.formats;

import dev.kvcache.BlockKey;
import dev.kvcache.PutStatus;
import dev.kvcache.codec.BlockCodec;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.testkit.RecordingTags;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.stream.Stream;

/**
 * Writes the format fixtures of the formats this build writes: a directory in the state a crash
 * leaves (a checkpoint, a journal after it, sealed and active super-blocks, records stored as they
 * are and encoded, a delete; since {@code v3}, records with tags). {@code FormatFixturesTest} opens every fixture ever written with
 * today's code. Run once per new format version, and commit what it writes:
 *
 * <pre>
 * ./mvnw -q -pl kvcache-disk test-compile exec:java -Dexec.classpathScope=test \
 *     -Dexec.mainClass=dev.kvcache.disk.formats.FormatFixtures \
 *     -Dexec.args=kvcache-disk/src/test/resources/formats/v3
 * </pre>
 */
public final class FormatFixtures {

  /** Blocks in a fixture: keys 0 to 19, version 1; {@link #DELETED} is deleted. */
  public static final int BLOCKS = 20;
  public static final int DELETED = 13;
  /** Blocks 0 to 9 are stored encoded (a codec container), the others as they are. */
  public static final int ENCODED = 10;

  /** The first fixture whose blocks have tags: the odd ones, {@link #tag}. */
  public static final String TAGGED_SINCE = "v3";

  private FormatFixtures() {}

  /** The tag of fixture block {@code i}: odd blocks have one, even ones none. */
  public static String tag(int i) {
    return i % 2 == 1 ? "fixture block " + i : null;
  }

  /** A listener that gives the fixture's blocks their tags. */
  public static RecordingTags tags() {
    RecordingTags tags = new RecordingTags();
    for (int i = 0; i < BLOCKS; i++) {
      tags.give(Payloads.key(i), tag(i));
    }
    return tags;
  }

  /** The length of fixture block {@code i}. */
  public static int length(int i) {
    return 3000 + 517 * i;
  }

  static DiskTierConfig.Builder config(Path dir) {
    return DiskTierConfig.builder(dir, 1L << 20).superBlockBytes(64L << 10).minFreeBytes(0)
        .syncPolicy(SyncPolicy.ALWAYS);
  }

  public static void main(String[] args) throws IOException {
    Path out = Path.of(args[0]);
    Path work = Files.createTempDirectory("kvcache-fixture");
    Path dir = work.resolve("tier");
    BlockCodec codec = BlockCodec.builder().chunkSizeBytes(4 << 10).build();
    try (DiskTier tier = DiskTier.open(config(dir).codec(codec).build())) {
      tier.listen(tags());
      put(tier, 0, ENCODED);
    } // a clean close: the checkpoint
    DiskTier tier = DiskTier.open(config(dir).build());
    tier.listen(tags());
    put(tier, ENCODED, BLOCKS);
    tier.delete(Payloads.key(DELETED));
    // the state a crash leaves: copied while the tier is open (every change is on the device)
    Files.createDirectories(out);
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        if (!f.getFileName().toString().equals("lock")) {
          Files.copy(f, out.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
        }
      }
    }
    tier.close();
    System.out.println("wrote the fixture to " + out);
  }

  private static void put(DiskTier tier, int from, int to) {
    for (int i = from; i < to; i++) {
      BlockKey key = Payloads.key(i);
      if (tier.put(key, Payloads.of(key, 1, length(i))) != PutStatus.STORED) {
        throw new IllegalStateException("fixture block " + i + " was not stored");
      }
    }
  }
}
