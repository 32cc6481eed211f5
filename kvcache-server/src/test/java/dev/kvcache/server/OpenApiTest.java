package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.micronaut.http.HttpMethod;
import io.micronaut.web.router.Router;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.Yaml;

class OpenApiTest {

  @TempDir Path dir;

  @Test
  @SuppressWarnings("unchecked")
  void theServedDescriptionNamesEveryRouteOfTheApi() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      HttpResponse<byte[]> served = server.send(HttpRequest.newBuilder(server.uri("/openapi.yaml")));
      assertThat(served.statusCode()).isEqualTo(200);
      Map<String, Object> spec = new Yaml().load(new String(served.body(), StandardCharsets.UTF_8));
      Map<String, Map<String, Object>> paths = (Map<String, Map<String, Object>>) spec.get("paths");
      Set<String> described = new TreeSet<>();
      paths.forEach((path, ops) -> ops.keySet().stream()
          .filter(op -> !op.equals("parameters"))
          .forEach(op -> described.add(op.toUpperCase(Locale.ROOT) + " " + path)));

      Set<String> routed = server.context.getBean(Router.class).uriRoutes()
          .map(r -> r.getHttpMethod() + " " + r.getUriMatchTemplate().toPathString())
          .filter(r -> !r.startsWith(HttpMethod.HEAD.name()))
          .filter(r -> r.contains(" /v1/") || r.endsWith(" /openapi.yaml"))
          .collect(Collectors.toCollection(TreeSet::new));
      assertThat(routed).isNotEmpty();
      assertThat(described).containsAll(routed);
    }
  }
}
