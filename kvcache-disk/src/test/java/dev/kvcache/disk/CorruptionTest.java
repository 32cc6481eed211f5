package dev.kvcache.disk;

import static dev.kvcache.disk.internal.RecordLayout.HEADER_BYTES;
import static dev.kvcache.disk.internal.RecordLayout.KEY_HI_OFFSET;
import static dev.kvcache.disk.internal.RecordLayout.KEY_LO_OFFSET;
import static dev.kvcache.disk.internal.RecordLayout.KIND_BLOCK;
import static dev.kvcache.disk.internal.RecordLayout.KIND_OFFSET;
import static dev.kvcache.disk.internal.RecordLayout.PAGE;
import static dev.kvcache.disk.internal.RecordLayout.RECORD_MAGIC;
import static dev.kvcache.disk.internal.RecordLayout.SEQUENCE_OFFSET;
import static dev.kvcache.disk.internal.RecordLayout.STORED_LENGTH_OFFSET;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.tool.DiskToolTest;
import dev.kvcache.testkit.Payloads;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Damage injected into each kind of file of a disk tier directory: a flipped bit, a zeroed page,
 * a file cut in half, a file deleted. Whatever the damage, the tier opens, never serves wrong
 * bytes and never brings back a deleted block. Damage to the metadata (journal, checkpoint) loses
 * no block, since the records describe themselves; damage to a super-block loses exactly the
 * blocks whose bytes it touched.
 */
@Tag("corruption")
class CorruptionTest {

  private static final int BLOCK = 64 << 10;
  private static final int BLOCKS = 60;
  private static final int DELETED = 7;

  @TempDir Path temp;

  enum Damage { BIT_FLIP, ZEROED_PAGE, TRUNCATED, DELETED }

  enum Target {
    /** The second super-block of a cleanly closed directory. */
    SUPER_BLOCK,
    /** The journal of a directory copied while its tier was open (the checkpoint is empty). */
    JOURNAL,
    /** The checkpoint of a cleanly closed directory (there is no journal). */
    CHECKPOINT
  }

  static Stream<Arguments> cases() {
    return Stream.of(Target.values())
        .flatMap(t -> Stream.of(Damage.values()).map(d -> Arguments.of(t, d)));
  }

  private static DiskTierConfig config(Path dir) {
    return DiskTierConfig.builder(dir, 64L << 20).superBlockBytes(1L << 20).minFreeBytes(0)
        .syncPolicy(SyncPolicy.NONE).build();
  }

  private static long version(int i) {
    return i < 10 ? 2 : 1;
  }

  @ParameterizedTest(name = "{1} in the {0}")
  @MethodSource("cases")
  void damageIsDetectedAndWhatIsIntactIsServed(Target target, Damage damage) throws IOException {
    Path dir = temp.resolve("d");
    Path image = temp.resolve("image");
    try (DiskTier tier = DiskTier.open(config(dir))) {
      for (int v = 1; v <= 2; v++) {
        for (int i = 0; i < (v == 1 ? BLOCKS : 10); i++) {
          BlockKey key = Payloads.key(i);
          assertThat(tier.put(key, Payloads.of(key, v, BLOCK + i))).isEqualTo(PutStatus.STORED);
        }
      }
      assertThat(tier.delete(Payloads.key(DELETED))).isTrue();
      if (target == Target.JOURNAL) {
        copyFiles(dir, image);
      }
    }
    Path damaged = target == Target.JOURNAL ? image : dir;
    Map<BlockKey, Extent> where = latestRecords(damaged);
    Path file = switch (target) {
      case SUPER_BLOCK -> damaged.resolve("sb-00000002.kvsb");
      case JOURNAL -> only(damaged, ".kvj");
      case CHECKPOINT -> damaged.resolve("index.kvx");
    };
    long[] range = inflict(file, damage);

    boolean headerOnlyHits = false;
    try (DiskTier tier = DiskTier.open(config(damaged))) {
      for (int i = 0; i < BLOCKS; i++) {
        BlockKey key = Payloads.key(i);
        ByteBuffer dst = ByteBuffer.allocate(BLOCK + i);
        GetStatus status = tier.getInto(key, dst);
        if (i == DELETED) {
          assertThat(status).as("the deleted block").isEqualTo(GetStatus.MISS);
          continue;
        }
        if (status == GetStatus.HIT) {
          assertThat(Payloads.verify(key, dst.flip())).as("block %d", i).isEqualTo(version(i));
        }
        Extent e = where.get(key);
        boolean inDamagedFile = target == Target.SUPER_BLOCK && e.file.equals(file.getFileName().toString());
        boolean payloadHit = inDamagedFile && e.payload < range[1] && e.payload + e.stored > range[0];
        boolean headerHit = inDamagedFile && e.payload - HEADER_BYTES < range[1] && e.payload > range[0];
        if (payloadHit) {
          assertThat(status).as("block %d, whose bytes were damaged", i).isEqualTo(GetStatus.MISS);
        } else if (!headerHit) {
          assertThat(status).as("block %d, intact", i).isEqualTo(GetStatus.HIT);
        } else {
          headerOnlyHits = true; // intact bytes behind a damaged header: served, or not
        }
      }
    }
    // The repaired directory verifies clean (but for an indexed block whose record header is
    // damaged, which verify reports) and serves the same blocks again.
    assertThat(DiskToolTest.tool("verify", damaged.toString()).exit()).isEqualTo(headerOnlyHits ? 1 : 0);
    try (DiskTier tier = DiskTier.open(config(damaged))) {
      for (int i = 0; i < BLOCKS; i++) {
        ByteBuffer dst = ByteBuffer.allocate(BLOCK + i);
        if (tier.getInto(Payloads.key(i), dst) == GetStatus.HIT) {
          assertThat(i).isNotEqualTo(DELETED);
          assertThat(Payloads.verify(Payloads.key(i), dst.flip())).isEqualTo(version(i));
        }
      }
    }
  }

  /** Damages {@code file}; returns the byte range touched, {@code [from, to)}. */
  private static long[] inflict(Path file, Damage damage) throws IOException {
    long size = Files.size(file);
    long middle = size / 2;
    switch (damage) {
      case BIT_FLIP -> {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
          ByteBuffer b = ByteBuffer.allocate(1);
          ch.read(b, middle);
          b.put(0, (byte) (b.get(0) ^ 0x10)).rewind();
          ch.write(b, middle);
        }
        return new long[] {middle, middle + 1};
      }
      case ZEROED_PAGE -> {
        long page = middle / PAGE * PAGE;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
          ch.write(ByteBuffer.allocate(PAGE), page);
        }
        return new long[] {page, page + PAGE};
      }
      case TRUNCATED -> {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
          ch.truncate(middle);
        }
        return new long[] {middle, Long.MAX_VALUE};
      }
      case DELETED -> {
        Files.delete(file);
        return new long[] {0, Long.MAX_VALUE};
      }
      default -> throw new AssertionError(damage);
    }
  }

  /** Where a block's newest record is. */
  private record Extent(String file, long payload, int stored, long sequence) {}

  /** The newest record of each block in {@code dir}'s super-blocks, read from their headers. */
  private static Map<BlockKey, Extent> latestRecords(Path dir) throws IOException {
    Map<BlockKey, Extent> latest = new HashMap<>();
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".kvsb"))::iterator) {
        ByteBuffer all = ByteBuffer.wrap(Files.readAllBytes(f)).order(ByteOrder.LITTLE_ENDIAN);
        for (int at = PAGE; at + HEADER_BYTES <= all.capacity(); at += HEADER_BYTES) {
          if (all.getInt(at) == RECORD_MAGIC && all.get(at + KIND_OFFSET) == KIND_BLOCK) {
            BlockKey key = BlockKey.of(all.getLong(at + KEY_HI_OFFSET), all.getLong(at + KEY_LO_OFFSET));
            Extent e = new Extent(f.getFileName().toString(), at + HEADER_BYTES,
                all.getInt(at + STORED_LENGTH_OFFSET), all.getLong(at + SEQUENCE_OFFSET));
            latest.merge(key, e, (a, b) -> b.sequence > a.sequence ? b : a);
          }
        }
      }
    }
    return latest;
  }

  private static Path only(Path dir, String suffix) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(f -> f.toString().endsWith(suffix)).findFirst().orElseThrow();
    }
  }

  /** Copies the files of an open tier: what a crash of the process at this moment would leave. */
  private static void copyFiles(Path dir, Path image) throws IOException {
    Files.createDirectories(image);
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        if (!f.getFileName().toString().equals("lock")) {
          Files.copy(f, image.resolve(f.getFileName()));
        }
      }
    }
  }
}
