package dev.kvcache.jlama;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import dev.kvcache.KvCache;
import dev.kvcache.testkit.ReadmeSnippets;
import dev.kvcache.tiered.KvCacheBuilder;
import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The example of docs/jvm-engines.md, compiled and run here so it cannot rot. */
class JvmEnginesDocTest {

  @TempDir Path dir;
  private final List<String> logged = new ArrayList<>();

  @Test
  void theExampleLoadsItsSecondPromptsPrefix() throws IOException {
    File modelDir = TestModels.llama(dir.resolve("model"), TestModels.Shape.small(), 3).toFile();
    example(modelDir, "A prompt long enough to fill several blocks of thirty-two tokens, "
        + "whose prefix the second generation loads instead of computing it.");
    assertThat(logged).singleElement().asString().matches("128 of 1\\d\\d prompt tokens loaded");
  }

  @Test
  void theDocShowsThisCode() throws IOException {
    ReadmeSnippets.assertDocShows(Path.of("..", "docs", "jvm-engines.md"), "jvm-engines",
        Path.of("src/test/java/dev/kvcache/jlama/JvmEnginesDocTest.java"));
  }

  private void example(File modelDir, String prompt) {
    // jvm-engines:start
    AbstractModel model = ModelSupport.loadModel(modelDir, DType.F32, DType.F32);
    try (KvCache cache = KvCacheBuilder.newBuilder().ramBytes(1L << 30).build()) {
      CachedGenerator generator = new CachedGenerator(
          new PrefixCache(model, cache, "my-model-v1", 32));  // its name, tokens per block
      Generation first = generator.generate(prompt, 0f, 64);  // computes, then stores
      Generation again = generator.generate(prompt, 0f, 64);  // loads the stored blocks
      log(again.loadedTokens() + " of " + again.promptTokens() + " prompt tokens loaded");
    }
    // jvm-engines:end
    model.close();
  }

  private void log(String line) {
    logged.add(line);
  }
}
