package dev.kvcache.server;

import dev.kvcache.Namespace;
import dev.kvcache.seal.MasterKeys;
import dev.kvcache.server.access.Namespaces;
import dev.kvcache.server.cache.SealedNamespaces;
import dev.kvcache.server.cache.SealingSettings;
import io.micronaut.context.annotation.Factory;
import jakarta.inject.Singleton;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * The namespaces sealed at rest ({@code kvcache.sealing.*}) and their master keys, checked against
 * the namespaces served.
 */
@Factory
class Sealing {

  private static final String PREFIX = "kvcache.sealing.";

  /**
   * The sealed namespaces.
   *
   * @throws IllegalArgumentException naming the setting: a namespace not served, master keys
   *     missing, given twice (a file and a value) or malformed, or given with no namespace to seal
   * @throws UncheckedIOException if the master keys' file cannot be read
   */
  @Singleton
  SealedNamespaces sealed(SealingSettings settings, Namespaces namespaces) {
    boolean file = !settings.getMasterKeysFile().isBlank();
    boolean value = !settings.getMasterKeys().isBlank();
    if (settings.getNamespaces().isEmpty()) {
      if (file || value) {
        throw new IllegalArgumentException(PREFIX + (file ? "master-keys-file" : "master-keys")
            + " is set but " + PREFIX + "namespaces is empty: no namespace would be sealed");
      }
      return SealedNamespaces.NONE;
    }
    Set<Namespace> sealed = new LinkedHashSet<>();
    for (String name : settings.getNamespaces()) {
      if (!namespaces.names().contains(name)) {
        throw new IllegalArgumentException(PREFIX + "namespaces: '" + name + "' is not one of"
            + " kvcache.namespaces " + namespaces.names());
      }
      sealed.add(namespaces.require(name));
    }
    if (file == value) {
      throw new IllegalArgumentException(PREFIX + "namespaces " + settings.getNamespaces()
          + (file ? " has master keys given twice: set " : " need master keys: set ") + PREFIX
          + "master-keys-file (a file of id:base64 entries) or " + PREFIX + "master-keys"
          + " (KVCACHE_SEALING_MASTER_KEYS)" + (file ? ", not both" : ""));
    }
    MasterKeys keys;
    if (file) {
      Path path = Path.of(settings.getMasterKeysFile().trim());
      try {
        keys = MasterKeys.fromFile(path);
      } catch (IOException e) {
        throw new UncheckedIOException(PREFIX + "master-keys-file: cannot read " + path + ": "
            + e, e);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(PREFIX + "master-keys-file: " + e.getMessage(), e);
      }
    } else {
      try {
        keys = MasterKeys.parse(settings.getMasterKeys());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(PREFIX + "master-keys: " + e.getMessage(), e);
      }
    }
    return new SealedNamespaces(keys, sealed);
  }
}
