package dev.kvcache.jlama;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A small OpenAI-compatible chat server over a {@link CachedGenerator}: {@code POST
 * /v1/chat/completions} (whole answers, or streamed as server-sent events with {@code "stream":
 * true}), {@code GET /v1/models} and {@code GET /health}. A chat client sends the whole
 * conversation every turn; its prompt starts with the previous turn's prompt and reply, whose keys
 * and values are loaded from the cache, so each turn computes only its new message. The answer's
 * {@code usage.prompt_tokens_details.cached_tokens} says how many prompt tokens were loaded.
 *
 * <p>Requests are served one at a time (each forward pass takes every core Jlama is given);
 * others wait. Bad requests get {@code 400} with OpenAI's error object, naming what was wrong.
 */
public final class ChatServer implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ChatServer.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  /** The largest request body taken: a conversation of some hundred thousand characters. */
  private static final int MAX_BODY_BYTES = 8 << 20;

  private final CachedGenerator generator;
  private final String modelName;
  private final HttpServer http;
  private final ExecutorService worker;

  private ChatServer(CachedGenerator generator, String modelName, HttpServer http) {
    this.generator = generator;
    this.modelName = modelName;
    this.http = http;
    this.worker = Executors.newSingleThreadExecutor(r -> new Thread(r, "kvcache-chat"));
    http.setExecutor(worker);
    http.createContext("/v1/chat/completions", this::completions);
    http.createContext("/v1/models", this::models);
    http.createContext("/health", exchange -> send(exchange, 200, JSON.createObjectNode()
        .put("status", "UP")));
  }

  /**
   * Starts a server of {@code generator}'s model, named {@code modelName} to clients, on {@code
   * host}:{@code port} (0: any free port, which {@link #port()} tells).
   */
  public static ChatServer start(CachedGenerator generator, String modelName, String host,
      int port) throws IOException {
    ChatServer server = new ChatServer(Objects.requireNonNull(generator, "generator"),
        Objects.requireNonNull(modelName, "modelName"),
        HttpServer.create(new InetSocketAddress(host, port), 16));
    server.http.start();
    return server;
  }

  /** The port the server listens on. */
  public int port() {
    return http.getAddress().getPort();
  }

  @Override
  public void close() {
    http.stop(0);
    worker.shutdownNow();
  }

  private void models(HttpExchange exchange) throws IOException {
    ObjectNode list = JSON.createObjectNode().put("object", "list");
    list.putArray("data").addObject().put("id", modelName).put("object", "model")
        .put("owned_by", "kvcache");
    send(exchange, 200, list);
  }

  private void completions(HttpExchange exchange) throws IOException {
    try {
      if (!exchange.getRequestMethod().equals("POST")) {
        throw new BadRequest("use POST for chat completions, not " + exchange.getRequestMethod());
      }
      JsonNode request = body(exchange);
      List<ChatSession.Message> messages = messages(request.path("messages"));
      float temperature = (float) number(request, "temperature", 1.0, 0, 2);
      int context = generator.prefixes().model().getConfig().contextLength;
      int maxTokens = (int) number(request, "max_completion_tokens",
          number(request, "max_tokens", context, 1, context), 1, context);
      int[] prompt = generator.encode(ChatSession.prompt(generator, messages));
      if (prompt.length >= context) {
        throw new BadRequest("the conversation is " + prompt.length + " tokens, and the model's "
            + "context " + context);
      }
      String id = "chatcmpl-" + UUID.randomUUID();
      long created = System.currentTimeMillis() / 1000;
      if (request.path("stream").asBoolean(false)) {
        stream(exchange, id, created, prompt, temperature, maxTokens);
      } else {
        Generation g = generator.generate(prompt, temperature, maxTokens, token -> { });
        ObjectNode answer = completion(id, created, "chat.completion");
        ObjectNode choice = answer.putArray("choices").addObject().put("index", 0);
        choice.putObject("message").put("role", "assistant").put("content", g.text());
        choice.put("finish_reason", finishReason(g));
        usage(answer, g);
        send(exchange, 200, answer);
      }
    } catch (BadRequest e) {
      error(exchange, 400, e.getMessage(), "invalid_request_error");
    } catch (RuntimeException e) {
      log.warn("a chat completion failed", e);
      error(exchange, 500, "the completion failed: " + e, "server_error");
    }
  }

  /** The answer streamed: a chunk per token as it is generated, then the finish and usage. */
  private void stream(HttpExchange exchange, String id, long created, int[] prompt,
      float temperature, int maxTokens) throws IOException {
    exchange.getResponseHeaders().add("Content-Type", "text/event-stream");
    exchange.getResponseHeaders().add("Cache-Control", "no-cache");
    exchange.sendResponseHeaders(200, 0);
    try (OutputStream out = exchange.getResponseBody()) {
      ObjectNode first = completion(id, created, "chat.completion.chunk");
      first.putArray("choices").addObject().put("index", 0).putObject("delta")
          .put("role", "assistant").put("content", "");
      event(out, first);
      Generation g;
      try {
        g = generator.generate(prompt, temperature, maxTokens, token -> {
          ObjectNode chunk = completion(id, created, "chat.completion.chunk");
          chunk.putArray("choices").addObject().put("index", 0).putObject("delta")
              .put("content", generator.text(new int[] {token}));
          event(out, chunk);
        });
      } catch (RuntimeException e) {
        // the answer has begun: the failure is its last event
        log.warn("a streamed chat completion failed", e);
        ObjectNode error = JSON.createObjectNode();
        error.putObject("error").put("message", "the completion failed: " + e)
            .put("type", "server_error");
        event(out, error);
        return;
      }
      ObjectNode last = completion(id, created, "chat.completion.chunk");
      last.putArray("choices").addObject().put("index", 0).put("finish_reason", finishReason(g))
          .putObject("delta");
      usage(last, g);
      event(out, last);
      out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
    }
  }

  private static void event(OutputStream out, ObjectNode data) {
    try {
      out.write(("data: " + JSON.writeValueAsString(data) + "\n\n")
          .getBytes(StandardCharsets.UTF_8));
      out.flush();
    } catch (IOException e) {
      throw new UncheckedIOException("the client went away", e);
    }
  }

  private ObjectNode completion(String id, long created, String object) {
    return JSON.createObjectNode().put("id", id).put("object", object).put("created", created)
        .put("model", modelName);
  }

  private static void usage(ObjectNode answer, Generation g) {
    ObjectNode usage = answer.putObject("usage").put("prompt_tokens", g.promptTokens())
        .put("completion_tokens", g.tokens().length)
        .put("total_tokens", g.promptTokens() + g.tokens().length);
    usage.putObject("prompt_tokens_details").put("cached_tokens", g.loadedTokens());
  }

  private static String finishReason(Generation g) {
    return g.finish() == Generation.Finish.STOP ? "stop" : "length";
  }

  private static JsonNode body(HttpExchange exchange) throws IOException, BadRequest {
    try (InputStream in = exchange.getRequestBody()) {
      byte[] bytes = in.readNBytes(MAX_BODY_BYTES + 1);
      if (bytes.length > MAX_BODY_BYTES) {
        throw new BadRequest("the request is over " + (MAX_BODY_BYTES >> 20) + " MiB");
      }
      JsonNode request = JSON.readTree(bytes);
      if (request == null || !request.isObject()) {
        throw new BadRequest("the request is a JSON object");
      }
      return request;
    } catch (JsonProcessingException e) {
      throw new BadRequest("the request is not JSON: " + e.getOriginalMessage());
    }
  }

  private static List<ChatSession.Message> messages(JsonNode array) throws BadRequest {
    if (!array.isArray() || array.isEmpty()) {
      throw new BadRequest("messages is an array of at least one message");
    }
    List<ChatSession.Message> messages = new ArrayList<>();
    for (JsonNode m : array) {
      String role = m.path("role").asText("");
      ChatSession.Role r = switch (role) {
        case "system", "developer" -> ChatSession.Role.SYSTEM;
        case "user" -> ChatSession.Role.USER;
        case "assistant" -> ChatSession.Role.ASSISTANT;
        default -> throw new BadRequest("a message's role is system, developer, user or "
            + "assistant, not \"" + role + "\"");
      };
      messages.add(new ChatSession.Message(r, content(m.path("content"))));
    }
    return messages;
  }

  /** A message's text: a string, or an array of text parts. */
  private static String content(JsonNode content) throws BadRequest {
    if (content.isTextual()) {
      return content.asText();
    }
    if (content.isArray()) {
      StringBuilder text = new StringBuilder();
      for (JsonNode part : content) {
        if (!"text".equals(part.path("type").asText())) {
          throw new BadRequest("only text parts are taken, not " + part.path("type"));
        }
        text.append(part.path("text").asText());
      }
      return text.toString();
    }
    throw new BadRequest("a message's content is a string or an array of text parts");
  }

  private static double number(JsonNode request, String name, double otherwise, double min,
      double max) throws BadRequest {
    JsonNode v = request.get(name);
    if (v == null || v.isNull()) {
      return otherwise;
    }
    if (!v.isNumber() || v.asDouble() < min || v.asDouble() > max) {
      throw new BadRequest(name + " is a number from " + fmt(min) + " to " + fmt(max) + ", not "
          + v);
    }
    return v.asDouble();
  }

  private static String fmt(double d) {
    return d == Math.rint(d) ? String.valueOf((long) d) : String.format(Locale.ROOT, "%s", d);
  }

  private static void error(HttpExchange exchange, int status, String message, String type)
      throws IOException {
    ObjectNode error = JSON.createObjectNode();
    error.putObject("error").put("message", message).put("type", type);
    send(exchange, status, error);
  }

  private static void send(HttpExchange exchange, int status, ObjectNode body)
      throws IOException {
    byte[] bytes = JSON.writeValueAsBytes(body);
    exchange.getResponseHeaders().add("Content-Type", "application/json");
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  /** A request the server cannot serve, and why. */
  private static final class BadRequest extends Exception {
    BadRequest(String message) {
      super(message);
    }
  }
}
