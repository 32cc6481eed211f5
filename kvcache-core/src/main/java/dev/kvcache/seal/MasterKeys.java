package dev.kvcache.seal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;
import javax.crypto.SecretKey;
import javax.crypto.spec.SecretKeySpec;

/**
 * The master keys blocks are sealed under, by id: each a 32-byte secret, the highest id the one new
 * blocks are sealed with, the others kept to open what they sealed until it is gone (rotation).
 * Written as {@code id:base64} entries separated by commas, spaces or new lines, such as {@code
 * 1:q0N...=, 2:Zx9...=}, in a file (a Kubernetes Secret mounted as one) or an environment
 * variable. A key is never shown: {@link #toString()} names the ids alone.
 */
public final class MasterKeys {

  /** Bytes of a master key: AES-256's. */
  public static final int KEY_BYTES = 32;
  /** The highest key id: it is stored in one byte of each sealed block. */
  public static final int MAX_ID = 255;

  private final Map<Integer, SecretKey> keys;
  private final int current;

  private MasterKeys(Map<Integer, SecretKey> keys) {
    this.keys = Collections.unmodifiableMap(keys);
    this.current = ((TreeMap<Integer, SecretKey>) keys).lastKey();
  }

  /**
   * Reads keys from {@code spec}, as {@code id:base64} entries.
   *
   * @throws IllegalArgumentException naming the entry that is not an id from 1 to 255 and the
   *     base64 of 32 bytes, or an id given twice; or if there is none
   */
  public static MasterKeys parse(String spec) {
    TreeMap<Integer, SecretKey> keys = new TreeMap<>();
    int n = 0;
    for (String entry : spec.trim().split("[,\\s]+")) {
      if (entry.isEmpty()) {
        continue;
      }
      n++;
      int colon = entry.indexOf(':');
      int id;
      try {
        id = colon < 1 ? -1 : Integer.parseInt(entry.substring(0, colon));
      } catch (NumberFormatException e) {
        id = -1;
      }
      if (id < 1 || id > MAX_ID) {
        throw new IllegalArgumentException("master key entry " + n + " does not start with a key"
            + " id from 1 to " + MAX_ID + " and a colon (id:base64)");
      }
      byte[] key;
      try {
        key = Base64.getDecoder().decode(entry.substring(colon + 1));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("master key " + id + " is not base64: "
            + e.getMessage(), e);
      }
      if (key.length != KEY_BYTES) {
        throw new IllegalArgumentException("master key " + id + " is " + key.length
            + " bytes; it must be " + KEY_BYTES + " (openssl rand -base64 32)");
      }
      if (keys.put(id, new SecretKeySpec(key, "AES")) != null) {
        throw new IllegalArgumentException("master key " + id + " is given twice");
      }
    }
    if (keys.isEmpty()) {
      throw new IllegalArgumentException("no master key given (id:base64, such as 1:"
          + "<openssl rand -base64 32>)");
    }
    return new MasterKeys(keys);
  }

  /**
   * Reads keys from a file, as {@link #parse}.
   *
   * @throws IOException if it cannot be read
   * @throws IllegalArgumentException naming the file and what is wrong in it
   */
  public static MasterKeys fromFile(Path file) throws IOException {
    String spec = Files.readString(file, StandardCharsets.UTF_8);
    try {
      return parse(spec);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(file + ": " + e.getMessage(), e);
    }
  }

  /** The id new blocks are sealed with: the highest. */
  public int currentId() {
    return current;
  }

  /** The key of {@code id}; null if there is none (a block sealed under it cannot be opened). */
  SecretKey key(int id) {
    return keys.get(id);
  }

  @Override
  public String toString() {
    return "MasterKeys" + keys.keySet() + "[current " + current + "]";
  }
}
