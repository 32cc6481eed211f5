package dev.kvcache.s3.internal;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import java.util.HexFormat;
import java.util.Optional;

/**
 * Where a block lives in the bucket: {@code <prefix><folder>/<key>}, derived from the block's
 * namespace and key alone, so that every server of a fleet, and a restarted one, finds what any of
 * them wrote. A namespace's folder is the first 8 bytes of its digest in hex; keys that know no
 * namespace share the folder {@value #UNNAMED}. Each namespace folder holds a descriptor, {@value
 * #DESCRIPTOR}, that says which model, dtype, layout and tenant it is.
 */
public final class ObjectNames {

  /** The folder of keys that know no namespace. */
  public static final String UNNAMED = "unnamed";
  /** The name of a namespace folder's descriptor object. */
  public static final String DESCRIPTOR = "namespace.json";

  private static final HexFormat HEX = HexFormat.of();
  private static final int FOLDER_DIGEST_BYTES = 8;

  private final String prefix;

  public ObjectNames(String prefix) {
    this.prefix = prefix;
  }

  /** What every name starts with. */
  public String prefix() {
    return prefix;
  }

  /** The folder of a namespace. */
  public static Folder folder(Namespace namespace) {
    byte[] digest = namespace.digest();
    return new Folder(HEX.formatHex(digest, 0, FOLDER_DIGEST_BYTES), namespace);
  }

  /** The folder of a key: its namespace's, or the folder of unnamed keys. */
  public static Folder folder(BlockKey key) {
    Optional<Namespace> ns = key.namespace();
    return ns.isPresent() ? folder(ns.get()) : Folder.NONE;
  }

  /** The object name of a block. */
  public String block(Folder folder, BlockKey key) {
    return prefix + folder.id() + "/" + key.toHex();
  }

  /** The object name of a folder's descriptor. */
  public String descriptor(Folder folder) {
    return prefix + folder.id() + "/" + DESCRIPTOR;
  }

  /**
   * The folder and key a listed object name holds, or empty for a name that is not a block's (a
   * descriptor, or an object that is not the tier's).
   */
  public Optional<Named> parse(String name) {
    if (!name.startsWith(prefix)) {
      return Optional.empty();
    }
    String rest = name.substring(prefix.length());
    int slash = rest.indexOf('/');
    if (slash < 1 || rest.length() - slash - 1 != 2 * BlockKey.BYTES) {
      return Optional.empty();
    }
    String folder = rest.substring(0, slash);
    if (!folder.equals(UNNAMED) && !isHex(folder, 2 * FOLDER_DIGEST_BYTES)) {
      return Optional.empty();
    }
    String hex = rest.substring(slash + 1);
    if (!isHex(hex, 2 * BlockKey.BYTES) || !hex.equals(hex.toLowerCase(java.util.Locale.ROOT))) {
      return Optional.empty();
    }
    return Optional.of(new Named(folder, BlockKey.fromHex(hex)));
  }

  /** The folder id of a descriptor's object name, or empty if it is not one. */
  public Optional<String> descriptorFolder(String name) {
    if (!name.startsWith(prefix) || !name.endsWith("/" + DESCRIPTOR)) {
      return Optional.empty();
    }
    String folder = name.substring(prefix.length(), name.length() - DESCRIPTOR.length() - 1);
    return isHex(folder, 2 * FOLDER_DIGEST_BYTES) ? Optional.of(folder) : Optional.empty();
  }

  private static boolean isHex(String s, int length) {
    if (s.length() != length) {
      return false;
    }
    for (int i = 0; i < s.length(); i++) {
      if (Character.digit(s.charAt(i), 16) < 0 || s.charAt(i) > 'f') {
        return false;
      }
    }
    return true;
  }

  /**
   * A namespace's folder in the bucket.
   *
   * @param id the folder's name: 16 hex digits, or {@value ObjectNames#UNNAMED}
   * @param namespace the namespace, when known; null for unnamed keys, or a folder listed before
   *     its descriptor was read
   */
  public record Folder(String id, Namespace namespace) {
    /** The folder of keys that know no namespace. */
    public static final Folder NONE = new Folder(UNNAMED, null);

    /** The key of a block in this folder, carrying the folder's namespace when it is known. */
    public BlockKey key(BlockKey key) {
      return namespace == null ? key : BlockKey.of(namespace, key.hi(), key.lo());
    }
  }

  /** A listed block: its folder id and key. */
  public record Named(String folder, BlockKey key) {}
}
