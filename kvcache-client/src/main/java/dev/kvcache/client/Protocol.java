package dev.kvcache.client;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.kvcache.BlockKey;
import dev.kvcache.PutStatus;
import dev.kvcache.spi.TierCounters;
import dev.kvcache.wire.Wire;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The server's HTTP API as the client speaks it, for one namespace: the paths, what each status
 * means, the JSON bodies of lookups and batches, and the reading of a lookup's answer.
 */
final class Protocol {

  private static final Pattern NAMESPACE = Pattern.compile("[A-Za-z0-9._-]{1,64}");
  private static final JsonFactory JSON = new JsonFactory();

  /** A server's answer to a lookup: how many keys it found, and for a pinned one its lease. */
  record LookupAnswer(int present, String lease, List<Integer> lengths) {

    static final LookupAnswer NONE = new LookupAnswer(0, null, List.of());
  }

  private final String namespace;

  /** @throws IllegalArgumentException if {@code namespace} is not a server namespace name */
  Protocol(String namespace) {
    if (!NAMESPACE.matcher(namespace).matches()) {
      throw new IllegalArgumentException("namespace '" + namespace
          + "' is not a server namespace name (1 to 64 of A-Z a-z 0-9 . _ -)");
    }
    this.namespace = namespace;
  }

  String blockPath(BlockKey key) {
    return Wire.blockPath(namespace, key);
  }

  String batchPath() {
    return Wire.batchPath(namespace);
  }

  String lookupPath() {
    return Wire.lookupPath(namespace);
  }

  String leasePath(String lease) {
    return Wire.leasePath(namespace, lease);
  }

  String pinnedBlockPath(String lease, int index) {
    return Wire.pinnedBlockPath(namespace, lease, index);
  }

  /** What a PUT's status says, counted in {@code counters}. */
  PutStatus putStatus(String method, BlockKey key, int status, ResponseSink.Text answer,
      TierCounters counters) {
    switch (status) {
      case 201:
        counters.put();
        return PutStatus.STORED;
      case 202:
      case RemoteCall.UNREACHABLE:
        counters.put();
        return PutStatus.NOT_ADMITTED;
      case 413:
        counters.rejection();
        return PutStatus.REJECTED_TOO_LARGE;
      case 507:
        counters.rejection();
        return answer.toString().contains("\"not-durable\"")
            ? PutStatus.REJECTED_NOT_DURABLE : PutStatus.REJECTED_NO_SPACE;
      default:
        throw unexpected(method, key, status, answer.toString());
    }
  }

  /**
   * Whether a read's status is a refusal no retry fixes: a token refused, or a 404 that is not
   * about the block (an unknown namespace).
   */
  static boolean refused(int status, String errorBody) {
    return status == 401 || status == 403 || (status == 404 && !isNotCached(errorBody));
  }

  /** Whether a 404's body says the block is not cached (not that the namespace is unknown). */
  static boolean isNotCached(String errorBody) {
    return errorBody.contains("\"not-cached\"");
  }

  RemoteTierException unexpected(String method, BlockKey key, int status, String body) {
    return new RemoteTierException(status, method + " of block " + key + " in namespace '"
        + namespace + "' answered " + status + (body.isEmpty() ? "" : ": " + body));
  }

  /**
   * The body {@code {"keys":["<hex>",...]}} of a lookup or batch, for the keys at {@code indexes},
   * with {@code "pin_ms"} if {@code pinMillis} is positive.
   */
  static ByteBuf keysJson(List<BlockKey> keys, List<Integer> indexes, long pinMillis) {
    StringBuilder json = new StringBuilder(30 + 35 * indexes.size()).append("{\"keys\":[");
    for (int j = 0; j < indexes.size(); j++) {
      json.append(j == 0 ? "\"" : ",\"").append(keys.get(indexes.get(j)).toHex()).append('"');
    }
    json.append(pinMillis > 0 ? "],\"pin_ms\":" + pinMillis + "}" : "]}");
    return Unpooled.wrappedBuffer(json.toString().getBytes(StandardCharsets.US_ASCII));
  }

  /**
   * Reads a lookup's answer: {@code present}, and {@code lease} and {@code lengths} if it pinned
   * its blocks; fields it does not know are skipped, whatever they hold.
   *
   * @throws IOException if the answer is not a JSON object of that shape
   */
  static LookupAnswer lookupAnswer(String json) throws IOException {
    int present = -1;
    String lease = null;
    List<Integer> lengths = List.of();
    try (JsonParser p = JSON.createParser(json)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IOException("not a JSON object");
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        JsonToken value = p.nextToken();
        switch (field) {
          case "present" -> present = expect(value, JsonToken.VALUE_NUMBER_INT, field, p).getIntValue();
          case "lease" -> lease = expect(value, JsonToken.VALUE_STRING, field, p).getText();
          case "lengths" -> {
            expect(value, JsonToken.START_ARRAY, field, p);
            List<Integer> read = new ArrayList<>();
            while (p.nextToken() == JsonToken.VALUE_NUMBER_INT) {
              read.add(p.getIntValue());
            }
            expect(p.currentToken(), JsonToken.END_ARRAY, field, p);
            lengths = read;
          }
          default -> p.skipChildren();
        }
      }
      if (p.currentToken() != JsonToken.END_OBJECT || present < 0) {
        throw new IOException("no \"present\" count");
      }
    }
    return new LookupAnswer(present, lease, lengths);
  }

  private static JsonParser expect(JsonToken token, JsonToken expected, String field,
      JsonParser p) throws IOException {
    if (token != expected) {
      throw new IOException("\"" + field + "\" holds " + token + ", not " + expected);
    }
    return p;
  }
}
