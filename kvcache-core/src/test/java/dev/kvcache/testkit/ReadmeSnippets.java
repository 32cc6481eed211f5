package dev.kvcache.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Checks that a code snippet in the README is the code a test compiles and runs. */
public final class ReadmeSnippets {

  private ReadmeSnippets() {}

  /**
   * Asserts that the Java block between {@code <!-- name:start -->} and {@code <!-- name:end -->}
   * in the project's README equals the lines between {@code // README:start} and {@code //
   * README:end} in {@code testSource}, ignoring indentation and blank lines.
   */
  public static void assertReadmeShows(String name, Path testSource) throws IOException {
    assertShows(Path.of("..", "README.md"), name, testSource, "README");
  }

  /**
   * Asserts that the Java block between {@code <!-- name:start -->} and {@code <!-- name:end -->}
   * in {@code doc} (a path from the module's directory) equals the lines between {@code //
   * name:start} and {@code // name:end} in {@code testSource}, ignoring indentation and blank
   * lines.
   */
  public static void assertDocShows(Path doc, String name, Path testSource) throws IOException {
    assertShows(doc, name, testSource, name);
  }

  private static void assertShows(Path doc, String name, Path testSource, String mark)
      throws IOException {
    String text = Files.readString(doc, StandardCharsets.UTF_8);
    String inDoc = between(text, "<!-- " + name + ":start -->\n```java\n", "```\n<!-- " + name + ":end -->");
    String inTest = between(Files.readString(testSource, StandardCharsets.UTF_8), "// " + mark + ":start\n", "    // " + mark + ":end");
    assertThat(normalize(inDoc)).isEqualTo(normalize(inTest));
  }

  private static String between(String text, String start, String end) {
    int from = text.indexOf(start);
    assertThat(from).as("marker '%s'", start.strip()).isNotNegative();
    int to = text.indexOf(end, from + start.length());
    assertThat(to).as("marker '%s'", end.strip()).isNotNegative();
    return text.substring(from + start.length(), to);
  }

  private static String normalize(String code) {
    return code.lines().map(String::strip).filter(l -> !l.isEmpty()).reduce("", (a, b) -> a + b + "\n");
  }
}
