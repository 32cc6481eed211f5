package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.kvcache.server.access.NamespaceSettings;
import dev.kvcache.server.access.Namespaces;
import dev.kvcache.server.errors.ApiException;
import dev.kvcache.server.http.FastGet;
import dev.kvcache.wire.Wire;
import java.util.List;
import org.junit.jupiter.api.Tag;

/**
 * Fuzzes what the HTTP/2 fast paths parse of a request before Micronaut sees it, with Jazzer: the
 * block path ({@link FastGet#blockPath}), the namespace and key it names ({@link
 * Namespaces#storageKey}) and the checksum header ({@link dev.kvcache.spi.Crc32c#fromHeader}). In
 * a normal test run this replays the seeds under {@code
 * src/test/resources/dev/kvcache/server/RequestPathFuzzTestInputs/}; to fuzz, as {@code .ci/run}
 * does for 30 seconds:
 *
 * <pre>
 * JAZZER_FUZZ=1 ./mvnw -pl kvcache-server test -Dtest=RequestPathFuzzTest
 * </pre>
 *
 * <p>The property: a path is a block path only if it is {@code /v1/namespaces/<ns>/blocks/<key>}
 * with no query and no further slash; a namespace or key the server does not take is a 404 or a
 * 400 {@link ApiException}, never another exception; a key taken is 32 hex digits; a checksum
 * header is four bytes of base64 or an {@link IllegalArgumentException}.
 */
@Tag("fuzz")
class RequestPathFuzzTest {

  private static final Namespaces NAMESPACES = namespaces("default", "other");

  private static Namespaces namespaces(String... names) {
    NamespaceSettings settings = new NamespaceSettings();
    settings.setNamespaces(List.of(names));
    return new Namespaces(settings);
  }

  @FuzzTest(maxDuration = "30s")
  void requestPartsAreTakenOrRefusedCleanly(FuzzedDataProvider data) {
    String path = data.consumeBoolean()
        ? "/v1/namespaces/" + data.consumeString(20) + "/blocks/" + data.consumeString(40)
        : data.consumeString(80);
    String[] target = FastGet.blockPath(path);
    if (target != null) {
      assertThat(path).startsWith("/v1/namespaces/").doesNotContain("?");
      assertThat(path).isEqualTo("/v1/namespaces/" + target[0] + "/blocks/" + target[1]);
      assertThat(target[1]).doesNotContain("/");
      try {
        NAMESPACES.storageKey(target[0], target[1]);
        assertThat(target[0]).isIn("default", "other");
        assertThat(target[1]).matches("[0-9a-fA-F]{32}");
      } catch (ApiException e) {
        assertThat(e.status().getCode()).isIn(404, 400);
      }
    }
    String checksum = data.consumeRemainingAsString();
    try {
      Wire.checksum(checksum);
    } catch (IllegalArgumentException e) {
      assertThat(e).hasMessageContaining("x-amz-checksum-crc32c");
    }
  }
}
