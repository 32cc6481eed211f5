package dev.kvcache.disk.formats;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.tool.DiskToolTest;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.testkit.RecordingTags;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every on-disk format kvcache has written is read by today's code: each fixture under {@code
 * src/test/resources/formats/} (written by {@link FormatFixtures} when its format was current) is
 * verified clean, opened, and serves each of its blocks byte for byte, and tells the tags its
 * blocks were written with (none before {@link FormatFixtures#TAGGED_SINCE}). A format change that
 * cannot read them fails here.
 */
@Tag("vectors")
class FormatFixturesTest {

  @TempDir Path temp;

  static List<String> fixtures() throws IOException, URISyntaxException {
    Path root = Path.of(FormatFixturesTest.class.getResource("/formats").toURI());
    try (Stream<Path> dirs = Files.list(root)) {
      return dirs.map(d -> d.getFileName().toString()).sorted().collect(Collectors.toList());
    }
  }

  @ParameterizedTest
  @MethodSource("fixtures")
  void todaysCodeReadsTheFixture(String version) throws Exception {
    Path source = Path.of(FormatFixturesTest.class.getResource("/formats/" + version).toURI());
    Path dir = temp.resolve(version);
    Files.createDirectories(dir);
    try (Stream<Path> files = Files.list(source)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        Files.copy(f, dir.resolve(f.getFileName()));
      }
    }
    DiskToolTest.Run verify = DiskToolTest.tool("verify", dir.toString());
    assertThat(verify.exit()).as(verify.out()).isZero();
    int tagged = version.compareTo(FormatFixtures.TAGGED_SINCE) >= 0 ? 9 : 0; // odd, not 13
    assertThat(verify.out()).contains("tags: " + tagged + " intact blocks have one, 0 of them");
    for (int open = 0; open < 2; open++) { // as found, then as today's code leaves it
      try (DiskTier tier = DiskTier.open(FormatFixtures.config(dir).build())) {
        RecordingTags tags = new RecordingTags();
        tier.listen(tags);
        Map<BlockKey, String> told = tags.awaitAll();
        Map<BlockKey, String> expected = new HashMap<>();
        for (int i = 0; i < FormatFixtures.BLOCKS; i++) {
          if (i != FormatFixtures.DELETED && FormatFixtures.tag(i) != null
              && version.compareTo(FormatFixtures.TAGGED_SINCE) >= 0) {
            expected.put(Payloads.key(i), FormatFixtures.tag(i));
          }
        }
        assertThat(told).as("the tags told").isEqualTo(expected);
        ByteBuffer dst = ByteBuffer.allocateDirect(FormatFixtures.length(FormatFixtures.BLOCKS));
        for (int i = 0; i < FormatFixtures.BLOCKS; i++) {
          BlockKey key = Payloads.key(i);
          GetStatus status = tier.getInto(key, dst.clear());
          if (i == FormatFixtures.DELETED) {
            assertThat(status).as("deleted block %d", i).isEqualTo(GetStatus.MISS);
          } else {
            assertThat(status).as("block %d", i).isEqualTo(GetStatus.HIT);
            assertThat(Payloads.verify(key, dst.flip())).isEqualTo(1);
            assertThat(dst.remaining()).isEqualTo(FormatFixtures.length(i));
          }
        }
        assertThat(tier.stats().blocks()).isEqualTo(FormatFixtures.BLOCKS - 1);
      }
    }
  }
}
