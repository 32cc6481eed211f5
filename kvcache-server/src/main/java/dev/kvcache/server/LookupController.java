package dev.kvcache.server;

import dev.kvcache.BlockKey;
import dev.kvcache.KvCache;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.serde.annotation.Serdeable;
import java.util.ArrayList;
import java.util.List;

/** Longest-prefix lookup: how many leading blocks of a request's chain are cached. */
@Controller("/v1/namespaces/{namespace}/lookup")
class LookupController {

  /** The most keys one lookup takes: a 2M-token prompt in blocks of 512 tokens. */
  static final int MAX_KEYS = 4096;

  private final KvCache cache;
  private final Namespaces namespaces;

  LookupController(KvCache cache, Namespaces namespaces) {
    this.cache = cache;
    this.namespaces = namespaces;
  }

  /**
   * The keys of a request's blocks, in chain order.
   *
   * @param keys hex keys, at most {@value LookupController#MAX_KEYS}
   */
  @Serdeable
  record LookupRequest(List<String> keys) {}

  /**
   * The answer of a lookup.
   *
   * @param present how many leading keys are cached
   */
  @Serdeable
  record LookupResponse(int present) {}

  @Post
  LookupResponse lookup(String namespace, @Body LookupRequest request) {
    if (request.keys() == null) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup", "the body needs a 'keys' list");
    }
    if (request.keys().size() > MAX_KEYS) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup",
          request.keys().size() + " keys; one lookup takes at most " + MAX_KEYS);
    }
    List<BlockKey> keys = new ArrayList<>(request.keys().size());
    for (String key : request.keys()) {
      keys.add(namespaces.storageKey(namespace, key));
    }
    return new LookupResponse(cache.lookupPrefix(keys));
  }
}
