package dev.kvcache.jlama;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import dev.kvcache.KvCache;
import dev.kvcache.tiered.KvCacheBuilder;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The OpenAI-compatible chat server: a conversation sent whole every turn, as chat clients send
 * it, is answered with the earlier turns' tokens counted as cached; streamed answers are the
 * whole ones in pieces; bad requests get 400 and say why.
 */
class ChatServerTest {

  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient HTTP = HttpClient.newHttpClient();

  @TempDir static Path dir;
  static AbstractModel model;
  static KvCache cache;
  static ChatServer server;

  @BeforeAll
  static void start() throws IOException {
    Path files = TestModels.llama(dir.resolve("model"), TestModels.Shape.small(), 7);
    model = ModelSupport.loadModel(files.toFile(), DType.F32, DType.F32);
    cache = KvCacheBuilder.newBuilder().ramBytes(64L << 20).build();
    server = ChatServer.start(new CachedGenerator(new PrefixCache(model, cache, "chat-test", 16,
        LoadOrPrefill.alwaysLoad())), "chat-test", "127.0.0.1", 0);
  }

  @AfterAll
  static void stop() {
    server.close();
    cache.close();
    model.close();
  }

  @Test
  void aConversationsEarlierTurnsAreCachedTokens() throws Exception {
    ObjectNode request = JSON.createObjectNode().put("model", "chat-test").put("temperature", 0)
        .put("max_tokens", 16);
    ArrayNode messages = request.putArray("messages");
    messages.addObject().put("role", "system").put("content", "You answer in one line.");
    long cachedBefore = -1;
    for (String message : List.of("What is a KV cache?", "And a prefix key?", "Thanks.")) {
      messages.addObject().put("role", "user").put("content", message);
      HttpResponse<String> r = post(request);
      assertThat(r.statusCode()).isEqualTo(200);
      JsonNode answer = JSON.readTree(r.body());
      assertThat(answer.path("object").asText()).isEqualTo("chat.completion");
      JsonNode choice = answer.path("choices").path(0);
      assertThat(choice.path("message").path("role").asText()).isEqualTo("assistant");
      String content = choice.path("message").path("content").asText();
      JsonNode usage = answer.path("usage");
      long cached = usage.path("prompt_tokens_details").path("cached_tokens").asLong();
      assertThat(cached).isLessThan(usage.path("prompt_tokens").asLong());
      if (cachedBefore >= 0) {
        assertThat(cached).as("the earlier turns' tokens").isGreaterThan(cachedBefore);
      } else {
        assertThat(cached).isZero();
      }
      cachedBefore = cached;
      messages.addObject().put("role", "assistant").put("content", content);
    }
  }

  @Test
  void aStreamedAnswerIsTheWholeOneInPieces() throws Exception {
    ObjectNode request = JSON.createObjectNode().put("temperature", 0).put("max_tokens", 12);
    request.putArray("messages").addObject().put("role", "user").put("content", "Stream this.");
    String whole = JSON.readTree(post(request).body()).path("choices").path(0).path("message")
        .path("content").asText();

    request.put("stream", true);
    HttpResponse<String> r = post(request);
    assertThat(r.headers().firstValue("Content-Type")).contains("text/event-stream");
    StringBuilder streamed = new StringBuilder();
    List<String> events = r.body().lines().filter(l -> l.startsWith("data: "))
        .map(l -> l.substring(6)).toList();
    assertThat(events).last().isEqualTo("[DONE]");
    for (String e : events.subList(0, events.size() - 1)) {
      JsonNode chunk = JSON.readTree(e);
      assertThat(chunk.path("object").asText()).isEqualTo("chat.completion.chunk");
      streamed.append(chunk.path("choices").path(0).path("delta").path("content").asText());
    }
    assertThat(streamed.toString()).isEqualTo(whole).isNotEmpty();
    JsonNode last = JSON.readTree(events.get(events.size() - 2));
    assertThat(last.path("choices").path(0).path("finish_reason").asText()).isIn("stop",
        "length");
    assertThat(last.path("usage").path("completion_tokens").asInt()).isPositive();
  }

  @Test
  void badRequestsAreRefusedSayingWhy() throws Exception {
    assertRefused("{}", "messages");
    assertRefused("not json", "not JSON");
    assertRefused("{\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}", "robot");
    assertRefused("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":5}",
        "temperature");
    assertRefused("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
        "text parts");
    HttpResponse<String> get = HTTP.send(HttpRequest.newBuilder(uri("/v1/chat/completions"))
        .build(), HttpResponse.BodyHandlers.ofString());
    assertThat(get.statusCode()).isEqualTo(400);
    assertThat(get.body()).contains("POST");
  }

  @Test
  void theModelIsListedAndTheServerHealthy() throws Exception {
    HttpResponse<String> models = HTTP.send(HttpRequest.newBuilder(uri("/v1/models")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(JSON.readTree(models.body()).path("data").path(0).path("id").asText())
        .isEqualTo("chat-test");
    HttpResponse<String> health = HTTP.send(HttpRequest.newBuilder(uri("/health")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(health.statusCode()).isEqualTo(200);
  }

  private static void assertRefused(String body, String reason) throws Exception {
    HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(uri("/v1/chat/completions"))
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(body).isEqualTo(400);
    assertThat(JSON.readTree(r.body()).path("error").path("message").asText()).as(body)
        .contains(reason);
  }

  private static HttpResponse<String> post(ObjectNode request) throws Exception {
    return HTTP.send(HttpRequest.newBuilder(uri("/v1/chat/completions"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(request))).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static URI uri(String path) {
    return URI.create("http://127.0.0.1:" + server.port() + path);
  }
}
