package dev.kvcache.s3api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Requests are routed as S3 routes them: the bucket from the host under a base domain or from the
 * path, the key percent-decoded, the operation from the method and the query; what is not
 * supported is refused with S3's error, naming it.
 */
class RouteTest {

  private static final Set<String> BASE = Set.of("s3.kv.test");

  @Test
  void pathStyleAndVirtualHostNameTheSameObject() throws Exception {
    Route path = Route.of("PUT", "127.0.0.1:9000", "/engine/model%40ws%40w/a%20b+c.bin", Map.of(),
        BASE);
    Route host = Route.of("PUT", "engine.s3.kv.test:9000", "/model%40ws%40w/a%20b+c.bin",
        Map.of(), BASE);
    for (Route r : new Route[] {path, host}) {
      assertThat(r.operation()).isEqualTo(Operation.PUT_OBJECT);
      assertThat(r.bucket()).isEqualTo("engine");
      assertThat(r.key()).isEqualTo("model@ws@w/a b+c.bin");
    }
    // a host that is the base domain itself, or another name, names no bucket
    assertThat(Route.of("GET", "s3.kv.test", "/engine/k", Map.of(), BASE).bucket())
        .isEqualTo("engine");
  }

  @Test
  void everyOperationFromItsMethodAndQuery() throws Exception {
    assertThat(op("GET", "/", Map.of())).isEqualTo(Operation.LIST_BUCKETS);
    assertThat(op("HEAD", "/b", Map.of())).isEqualTo(Operation.HEAD_BUCKET);
    assertThat(op("PUT", "/b", Map.of())).isEqualTo(Operation.CREATE_BUCKET);
    assertThat(op("GET", "/b", Map.of("list-type", "2", "prefix", "p")))
        .isEqualTo(Operation.LIST_OBJECTS_V2);
    assertThat(op("GET", "/b", Map.of("marker", "m"))).isEqualTo(Operation.LIST_OBJECTS);
    assertThat(op("POST", "/b", Map.of("delete", ""))).isEqualTo(Operation.DELETE_OBJECTS);
    assertThat(op("GET", "/b/k", Map.of())).isEqualTo(Operation.GET_OBJECT);
    assertThat(op("GET", "/b/k", Map.of("partNumber", "1"))).isEqualTo(Operation.GET_OBJECT);
    assertThat(op("HEAD", "/b/k", Map.of())).isEqualTo(Operation.HEAD_OBJECT);
    assertThat(op("DELETE", "/b/k", Map.of())).isEqualTo(Operation.DELETE_OBJECT);
    assertThat(op("DELETE", "/b", Map.of())).isEqualTo(Operation.DELETE_BUCKET);
    assertThat(op("POST", "/b/k", Map.of("uploads", "")))
        .isEqualTo(Operation.CREATE_MULTIPART_UPLOAD);
    assertThat(op("PUT", "/b/k", Map.of("uploadId", "u", "partNumber", "2")))
        .isEqualTo(Operation.UPLOAD_PART);
    assertThat(op("POST", "/b/k", Map.of("uploadId", "u")))
        .isEqualTo(Operation.COMPLETE_MULTIPART_UPLOAD);
    assertThat(op("DELETE", "/b/k", Map.of("uploadId", "u")))
        .isEqualTo(Operation.ABORT_MULTIPART_UPLOAD);
    assertThat(Operation.PUT_OBJECT.writes()).isTrue();
    assertThat(Operation.HEAD_OBJECT.writes()).isFalse();
  }

  @Test
  void whatIsNotSupportedIsRefusedNamingIt() {
    assertRefused("GET", "/b/k", Map.of("acl", ""), S3Error.NOT_IMPLEMENTED, "?acl");
    assertRefused("GET", "/b", Map.of("list-type", "3"), S3Error.INVALID_ARGUMENT, "not 3");
    assertRefused("GET", "/b/k", Map.of("uploadId", "u"), S3Error.NOT_IMPLEMENTED, "ListParts");
    assertRefused("PATCH", "/b/k", Map.of(), S3Error.METHOD_NOT_ALLOWED, "PATCH");
    assertRefused("PUT", "/b/" + "k".repeat(1025), Map.of(), S3Error.KEY_TOO_LONG, "1024");
    assertRefused("PUT", "/b/a%01b", Map.of(), S3Error.INVALID_ARGUMENT, "U+0001");
  }

  private static Operation op(String method, String path, Map<String, String> query)
      throws S3Exception {
    return Route.of(method, "localhost:9000", path, query, BASE).operation();
  }

  private static void assertRefused(String method, String path, Map<String, String> query,
      S3Error error, String message) {
    assertThatThrownBy(() -> Route.of(method, "localhost", path, query, BASE))
        .isInstanceOfSatisfying(S3Exception.class, e -> {
          assertThat(e.error()).isEqualTo(error);
          assertThat(e.getMessage()).contains(message);
        });
  }
}
