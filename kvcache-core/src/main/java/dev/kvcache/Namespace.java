package dev.kvcache;

import dev.kvcache.internal.keys.KeyHashing;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The scope a block key belongs to: the model, the tensor dtype, the memory layout (for example the
 * tensor-parallel rank) and the tenant.
 *
 * <p>Every {@link BlockKey} is salted with its namespace's digest, so two namespaces never share a
 * key even for identical token prefixes: a block cached for one model or tenant can never be served
 * to another. The digest is SHA-256 over the four fields as specified in {@code docs/keys.md}.
 *
 * <p>Instances are immutable and thread-safe. Each field is valid Unicode (no unpaired surrogates) of at most
 * {@value #MAX_FIELD_BYTES} UTF-8 bytes; the tenant may be empty.
 */
public final class Namespace {

  /** The largest UTF-8 length of any one field. */
  public static final int MAX_FIELD_BYTES = 1024;

  private final String model;
  private final String dtype;
  private final String layout;
  private final String tenant;
  private final byte[] digest;
  /** {@link #hashCode()}, computed once: a namespace is looked up by tiers on every operation. */
  private final int hash;

  /**
   * The namespaces made in this JVM, by {@link #tag()}: a tier that stored a block's tag finds its
   * namespace again (after a restart, once the namespace is made again).
   */
  private static final ConcurrentHashMap<Long, Namespace> BY_TAG = new ConcurrentHashMap<>();

  private Namespace(String model, String dtype, String layout, String tenant) {
    this.model = requireField("model", model, false);
    this.dtype = requireField("dtype", dtype, false);
    this.layout = requireField("layout", layout, false);
    this.tenant = requireField("tenant", tenant, true);
    this.digest = KeyHashing.namespaceDigest(model, dtype, layout, tenant);
    this.hash = Arrays.hashCode(digest);
    BY_TAG.putIfAbsent(tag(), this);
  }

  /**
   * A namespace without a tenant.
   *
   * @param model the model id, for example {@code "llama-3.1-8b"}
   * @param dtype the KV dtype, for example {@code "bf16"}
   * @param layout the layout of the block's bytes, for example {@code "tp0of1"}
   * @throws IllegalArgumentException if a field is empty or longer than {@value #MAX_FIELD_BYTES}
   *     UTF-8 bytes
   */
  public static Namespace of(String model, String dtype, String layout) {
    return new Namespace(model, dtype, layout, "");
  }

  /**
   * A namespace for one tenant; tenants never see each other's blocks.
   *
   * @throws IllegalArgumentException if a field other than the tenant is empty, or any field is
   *     longer than {@value #MAX_FIELD_BYTES} UTF-8 bytes
   */
  public static Namespace of(String model, String dtype, String layout, String tenant) {
    return new Namespace(model, dtype, layout, tenant);
  }

  public String model() {
    return model;
  }

  public String dtype() {
    return dtype;
  }

  public String layout() {
    return layout;
  }

  /** The tenant, or the empty string when the namespace has none. */
  public String tenant() {
    return tenant;
  }

  /** A copy of the 32-byte SHA-256 digest that salts this namespace's keys. */
  public byte[] digest() {
    return digest.clone();
  }

  /**
   * The first 8 bytes of the digest, big-endian: a short id of the namespace that a tier can
   * store beside a block (never 0 in practice; 0 stands for "no namespace") and turn back into the
   * namespace with {@link #ofTag}.
   */
  public long tag() {
    return ByteBuffer.wrap(digest).getLong(0);
  }

  /**
   * The namespace of a {@link #tag()}, if one with that tag has been made in this JVM; empty for
   * 0 or a tag of a namespace not made (yet).
   */
  public static Optional<Namespace> ofTag(long tag) {
    return tag == 0 ? Optional.empty() : Optional.ofNullable(BY_TAG.get(tag));
  }

  byte[] digestNoCopy() {
    return digest;
  }

  private static String requireField(String name, String value, boolean mayBeEmpty) {
    Objects.requireNonNull(value, () -> "namespace " + name + " must not be null");
    if (!mayBeEmpty && value.isEmpty()) {
      throw new IllegalArgumentException("namespace " + name + " must not be empty");
    }
    int bytes;
    try {
      bytes = KeyHashing.utf8(value).length;
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("namespace " + name + " " + e.getMessage(), e);
    }
    if (bytes > MAX_FIELD_BYTES) {
      throw new IllegalArgumentException(
          "namespace " + name + " is " + bytes + " UTF-8 bytes, more than " + MAX_FIELD_BYTES);
    }
    return value;
  }

  @Override
  public boolean equals(Object o) {
    return o == this || o instanceof Namespace && Arrays.equals(digest, ((Namespace) o).digest);
  }

  @Override
  public int hashCode() {
    return hash;
  }

  @Override
  public String toString() {
    return "Namespace[model=" + model + ", dtype=" + dtype + ", layout=" + layout
        + (tenant.isEmpty() ? "" : ", tenant=" + tenant) + "]";
  }
}
