package dev.kvcache.server;

import static dev.kvcache.server.ParityCases.BLOCK;
import static dev.kvcache.server.ParityCases.BODY;
import static dev.kvcache.server.ParityCases.HIT;
import static dev.kvcache.server.ParityCases.HIT2;
import static dev.kvcache.server.ParityCases.NEW;
import static dev.kvcache.server.ParityCases.READER;
import static dev.kvcache.server.ParityCases.SCRAPER;
import static dev.kvcache.server.ParityCases.STRANGER;
import static dev.kvcache.server.ParityCases.WRITER;
import static dev.kvcache.server.ParityCases.keys;
import static dev.kvcache.server.ProtocolParityTest.digest;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.server.ParityTransports.Got;
import dev.kvcache.server.ParityTransports.RawH1;
import dev.kvcache.server.ParityTransports.RawH2;
import dev.kvcache.server.ParityTransports.Request;
import dev.kvcache.server.ParityTransports.Server;
import dev.kvcache.server.ParityTransports.Stack;
import dev.kvcache.server.ParityTransports.Transport;
import dev.kvcache.server.errors.ApiException;
import io.micronaut.web.router.Router;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.Yaml;

/**
 * Who may do what, route by route: every route the server registers has a row here, and every
 * row is sent by every kind of caller (no token, a wrong one, a token that may only read the
 * namespace, one that may write it, one whose rights are on another namespace, one that may only
 * read the metrics) over HTTP/2 to a server with its fast paths on, HTTP/2 to one with them off,
 * and HTTP/1.1. A caller without the right gets 401 or 403 and changes nothing; a caller with it
 * gets the row's answer. A route the server registers without a row fails the test, and so does
 * a route of the API that {@code docs/openapi.yaml} does not describe.
 */
class AuthMatrixTest {

  /** What a route asks of its caller. */
  enum Need {
    /** A token that may read the namespace. */
    READ,
    /** A token that may write the namespace. */
    WRITE,
    /** A token with the metrics right. */
    METRICS,
    /** Nothing: anyone is answered alike. */
    NOTHING,
    /** Nothing for the status; the metrics right for the details. */
    HEALTH
  }

  /** The callers, by the token they send. */
  enum Caller {
    NONE(null), WRONG("x".repeat(40)), READS(READER), WRITES(WRITER), OTHER_NAMESPACE(STRANGER),
    METRICS_ONLY(SCRAPER);

    final String token;

    Caller(String token) {
      this.token = token;
    }

    boolean may(Need need) {
      return switch (need) {
        case READ -> this == READS || this == WRITES;
        case WRITE -> this == WRITES;
        case METRICS -> this == METRICS_ONLY;
        case NOTHING, HEALTH -> true;
      };
    }
  }

  /**
   * One route: its method and template as the router gives them, what it needs, the request sent
   * (given the lease of a pin on {@link ParityCases#HIT} and {@link ParityCases#HIT2}) and the
   * status a caller with the right gets.
   */
  record Row(String method, String template, Need need, Function<String, String> path,
      String contentType, byte[] body, int status) {

    String route() {
      return method + " " + template;
    }

    Request request(String lease, String token) {
      List<String> headers = new ArrayList<>();
      if (contentType != null) {
        headers.add("content-type");
        headers.add(contentType);
      }
      if (token != null) {
        headers.add("authorization");
        headers.add("Bearer " + token);
      }
      return new Request(method, path.apply(lease), body, false, true, headers);
    }
  }

  static final String NS = "/v1/namespaces/default";

  static List<Row> rows() {
    byte[] lookup = keys(HIT, HIT2).getBytes(StandardCharsets.UTF_8);
    byte[] copy = "{}".getBytes(StandardCharsets.UTF_8);
    String block = "/v1/namespaces/{namespace}/blocks/{key}";
    String leaseBlock = "/v1/namespaces/{namespace}/leases/{lease}/blocks/{index}";
    String json = "application/json";
    return List.of(
        new Row("PUT", block, Need.WRITE, l -> NS + "/blocks/" + NEW,
            "application/octet-stream", BODY, 201),
        new Row("GET", block, Need.READ, l -> NS + "/blocks/" + HIT, null, null, 200),
        new Row("HEAD", block, Need.READ, l -> NS + "/blocks/" + HIT, null, null, 200),
        new Row("DELETE", block, Need.WRITE, l -> NS + "/blocks/" + HIT, null, null, 204),
        new Row("POST", "/v1/namespaces/{namespace}/batch-get", Need.READ,
            l -> NS + "/batch-get", json, lookup, 200),
        new Row("POST", "/v1/namespaces/{namespace}/lookup", Need.READ, l -> NS + "/lookup", json,
            lookup, 200),
        new Row("GET", leaseBlock, Need.READ, l -> NS + "/leases/" + l + "/blocks/0", null, null,
            200),
        new Row("HEAD", leaseBlock, Need.READ, l -> NS + "/leases/" + l + "/blocks/0", null, null,
            200),
        // an empty body: a caller with the right is refused for what it left out, not for who
        new Row("POST", "/v1/namespaces/{namespace}/leases/{lease}/copy-into", Need.READ,
            l -> NS + "/leases/" + l + "/copy-into", json, copy, 400),
        new Row("DELETE", "/v1/namespaces/{namespace}/leases/{lease}", Need.READ,
            l -> NS + "/leases/" + l, null, null, 204),
        new Row("DELETE", "/v1/namespaces/{namespace}", Need.WRITE, l -> NS, null, null, 200),
        // this server has no object tier: a caller with the right is told so (404 no-object-tier)
        new Row("DELETE", "/v1/namespaces/{namespace}/objects", Need.WRITE, l -> NS + "/objects",
            null, null, 404),
        new Row("GET", "/openapi.yaml", Need.NOTHING, l -> "/openapi.yaml", null, null, 200),
        new Row("HEAD", "/openapi.yaml", Need.NOTHING, l -> "/openapi.yaml", null, null, 200),
        new Row("GET", "/prometheus", Need.METRICS, l -> "/prometheus", null, null, 200),
        new Row("HEAD", "/prometheus", Need.METRICS, l -> "/prometheus", null, null, 200),
        new Row("GET", "/health", Need.HEALTH, l -> "/health", null, null, 200),
        new Row("HEAD", "/health", Need.NOTHING, l -> "/health", null, null, 200),
        new Row("GET", "/health/{selector}", Need.NOTHING, l -> "/health/liveness", null, null,
            200),
        new Row("HEAD", "/health/{selector}", Need.NOTHING, l -> "/health/readiness", null, null,
            200));
  }

  @TempDir static Path dir;
  static Server fast;
  static Server routed;
  static List<Transport> transports;

  @BeforeAll
  static void start() {
    fast = new Server(dir.resolve("fast"), true);
    routed = new Server(dir.resolve("routed"), false);
    transports = List.of(new RawH2(fast, Stack.H2_FAST), new RawH2(routed, Stack.H2_ROUTED),
        new RawH1(fast));
  }

  @AfterAll
  static void stop() {
    if (fast != null) {
      fast.close();
    }
    if (routed != null) {
      routed.close();
    }
  }

  @Test
  void everyRegisteredRouteHasARow() {
    Set<String> registered = fast.test.context.getBean(Router.class).uriRoutes()
        .map(r -> r.getHttpMethod() + " " + r.getUriMatchTemplate().toPathString())
        .collect(Collectors.toCollection(TreeSet::new));
    Set<String> rowed = rows().stream().map(Row::route)
        .collect(Collectors.toCollection(TreeSet::new));
    assertThat(rowed).as("the routes of this test").isEqualTo(registered);
  }

  @Test
  @SuppressWarnings("unchecked")
  void everyRouteOfTheApiIsDescribed() throws Exception {
    Map<String, Object> spec = new Yaml().load(Files.readString(
        Path.of("..", "docs", "openapi.yaml")));
    Set<String> described = new TreeSet<>();
    ((Map<String, Map<String, Object>>) spec.get("paths")).forEach((path, ops) ->
        ops.keySet().stream().filter(op -> !op.equals("parameters"))
            .forEach(op -> described.add(op.toUpperCase(Locale.ROOT) + " " + path)));
    Set<String> rowed = rows().stream().filter(r -> !r.method().equals("HEAD"))
        .filter(r -> !r.template().startsWith("/health/"))
        .map(Row::route).collect(Collectors.toCollection(TreeSet::new));
    assertThat(described).isEqualTo(rowed);
  }

  @Test
  void everyCallerGetsWhatItsTokenAllowsOnEveryRouteOverEveryStack() throws Exception {
    Map<String, String> wrong = new LinkedHashMap<>();
    int sent = 0;
    for (Row row : rows()) {
      for (Caller caller : Caller.values()) {
        for (Transport t : transports) {
          t.server.reset();
          String lease = t.server.pin(HIT, HIT2);
          Got got = t.send(row.request(lease, caller.token));
          sent++;
          String problem = judge(row, caller, got, t.server, lease);
          if (problem != null) {
            wrong.put(row.route() + " by " + caller + " over " + t, problem);
          }
        }
      }
    }
    assertThat(sent).isEqualTo(rows().size() * Caller.values().length * transports.size());
    assertThat(wrong).as("answers other than the token allows").isEmpty();
  }

  /** What is wrong with {@code got}, or null if it is what {@code caller} should get. */
  private static String judge(Row row, Caller caller, Got got, Server server, String lease) {
    String status = got.status();
    String body = new String(got.body(), StandardCharsets.UTF_8);
    if (caller.may(row.need())) {
      if (!status.equals(Integer.toString(row.status()))) {
        return status + " " + body;
      }
      if (row.need() == Need.HEALTH) {
        boolean details = body.contains("\"details\"");
        if (details != (caller == Caller.METRICS_ONLY)) {
          return (details ? "details shown: " : "no details: ") + body;
        }
      }
      return null;
    }
    boolean known = caller != Caller.NONE && caller != Caller.WRONG;
    String expected = known ? "403" : "401";
    if (!status.equals(expected)) {
      return status + " " + body + " (not " + expected + ")";
    }
    if (!row.method().equals("HEAD")) {
      String error = error(body);
      String expectedError = known ? "forbidden" : "unauthorized";
      if (!expectedError.equals(error)) {
        return status + " with error " + error + " (not " + expectedError + ")";
      }
    }
    if (row.template().startsWith("/prometheus") && body.contains("kvcache_")) {
      return "refused, with the metrics in its body";
    }
    // a refused request changed nothing
    if (!server.stored(HIT).equals(digest(BLOCK))) {
      return "refused, yet " + HIT + " changed";
    }
    if (!server.stored(NEW).equals("absent")) {
      return "refused, yet " + NEW + " was stored";
    }
    try {
      server.pins.find("default", lease);
    } catch (ApiException e) {
      return "refused, yet the lease was released";
    }
    return null;
  }

  private static String error(String body) {
    Matcher m = Pattern.compile("\"error\":\"([^\"]+)\"").matcher(body);
    return m.find() ? m.group(1) : null;
  }
}
