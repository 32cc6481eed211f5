package dev.kvcache.server.access;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import dev.kvcache.server.errors.ApiException;
import io.micronaut.http.HttpStatus;
import jakarta.inject.Singleton;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The configured namespaces and the keys blocks are stored under. A client's key is salted with
 * its namespace ({@link BlockKey#ofRaw}), so the same key in two namespaces names two blocks and a
 * caller can never reach another namespace's block.
 */
@Singleton
public class Namespaces {

  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");

  private final Map<String, Namespace> byName = new HashMap<>();

  public Namespaces(NamespaceSettings settings) {
    if (settings.getNamespaces().isEmpty()) {
      throw new IllegalArgumentException("kvcache.namespaces is empty: the server would serve nothing");
    }
    for (String name : settings.getNamespaces()) {
      if (!NAME.matcher(name).matches()) {
        throw new IllegalArgumentException("kvcache.namespaces: '" + name
            + "' is not a namespace name (1 to 64 of A-Z a-z 0-9 . _ -)");
      }
      byName.put(name, Namespace.of("kvcache-server", "opaque", "v1", name));
    }
  }

  /**
   * The key a client's block is stored under.
   *
   * @throws ApiException 404 for an unknown namespace, 400 for a key that is not 32 hex digits
   */
  public BlockKey storageKey(String namespace, String hexKey) {
    Namespace ns = require(namespace);
    return BlockKey.ofRaw(ns, parseKey(hexKey).toBytes());
  }

  /**
   * The keys a list of a client's keys are stored under, in order; all checked before any is used.
   *
   * @throws ApiException 404 for an unknown namespace, 400 for a key that is not 32 hex digits
   */
  public List<BlockKey> storageKeys(String namespace, List<String> hexKeys) {
    List<BlockKey> keys = new ArrayList<>(hexKeys.size());
    for (String key : hexKeys) {
      keys.add(storageKey(namespace, key));
    }
    return keys;
  }

  /**
   * The keys a list of a client's keys are stored under, in order.
   *
   * @throws ApiException 404 for an unknown namespace
   */
  public List<BlockKey> storageKeysOf(String namespace, List<BlockKey> clientKeys) {
    Namespace ns = require(namespace);
    List<BlockKey> keys = new ArrayList<>(clientKeys.size());
    for (BlockKey key : clientKeys) {
      keys.add(BlockKey.ofRaw(ns, key.toBytes()));
    }
    return keys;
  }

  /** The names of the namespaces served, in no order. */
  public Set<String> names() {
    return Set.copyOf(byName.keySet());
  }

  /** The namespace of this name, if it is served. */
  public Optional<Namespace> find(String namespace) {
    return Optional.ofNullable(byName.get(namespace));
  }

  /** @throws ApiException 404 if {@code namespace} is not configured */
  public Namespace require(String namespace) {
    Namespace ns = byName.get(namespace);
    if (ns == null) {
      throw new ApiException(HttpStatus.NOT_FOUND, "unknown-namespace",
          "namespace '" + namespace + "' is not served here");
    }
    return ns;
  }

  private static BlockKey parseKey(String hex) {
    try {
      return BlockKey.fromHex(hex);
    } catch (IllegalArgumentException e) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-key", e.getMessage());
    }
  }
}
