package dev.kvcache.disk;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import dev.kvcache.disk.device.DeviceFile;
import dev.kvcache.disk.device.StorageDevice;
import dev.kvcache.seal.MasterKeys;
import dev.kvcache.seal.Sealer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The disk tier's sealed namespaces ({@link DiskTierConfig#sealed()}): the salt of each, kept in
 * {@code salts/<namespace tag in hex>.salt} in the tier's directory ({@link Sealer#saltRecord},
 * written to a temporary file, forced and renamed into place, through the tier's {@link
 * StorageDevice}, in a directory its owner's alone), and a {@link Sealer} per namespace
 * under the master keys. A namespace's salt is made at its first sealed put; {@link #shred}
 * deletes it, after which no block sealed under it opens again, whatever copies of the files
 * survive.
 */
final class Seals {

  private static final Logger log = LoggerFactory.getLogger(Seals.class);

  private final MasterKeys masters;
  private final Set<Long> sealed = ConcurrentHashMap.newKeySet();
  private final Path dir;
  private final StorageDevice device;
  /** Sealers by namespace tag, for the salts read or made so far. */
  private final Map<Long, Sealer> sealers = new ConcurrentHashMap<>();
  private final LongAdder failures = new LongAdder();

  /** The seals of {@code config}; null if it seals no namespace. */
  static Seals of(DiskTierConfig config) {
    return config.sealed().isEmpty() ? null : new Seals(config);
  }

  private Seals(DiskTierConfig config) {
    this.masters = config.masterKeys();
    for (Namespace ns : config.sealed()) {
      sealed.add(ns.tag());
    }
    this.dir = config.directory().resolve("salts");
    this.device = config.device();
  }

  /** Whether the key's namespace is sealed. */
  boolean seals(BlockKey key) {
    return key.namespace().map(ns -> sealed.contains(ns.tag())).orElse(false);
  }

  /**
   * The sealer of the key's namespace if it is sealed, its salt made if it has none yet; null if
   * the key's blocks are stored as they are.
   *
   * @throws IOException if a new salt cannot be written
   */
  Sealer forWrite(BlockKey key) throws IOException {
    Namespace ns = key.namespace().orElse(null);
    return ns == null || !sealed.contains(ns.tag()) ? null : sealerOf(ns, true);
  }

  /**
   * The sealer of the namespace whose tag a sealed record carries; null if its salt is gone (the
   * namespace was shredded) or damaged, or the namespace is not known in this JVM.
   */
  Sealer forRead(long namespaceTag) {
    Namespace ns = Namespace.ofTag(namespaceTag).orElse(null);
    if (ns == null) {
      return null;
    }
    try {
      return sealerOf(ns, false);
    } catch (IOException e) {
      log.warn("cannot read the salt of {} in {}: {}", ns, dir, e.toString());
      return null;
    }
  }

  /**
   * The sealer of {@code ns} under its salt, read once; with {@code make}, a salt is made if it
   * has none, else null is returned.
   */
  private Sealer sealerOf(Namespace ns, boolean make) throws IOException {
    Sealer s = sealers.get(ns.tag());
    if (s != null) {
      return s;
    }
    synchronized (this) {
      s = sealers.get(ns.tag());
      if (s == null) {
        byte[] salt = read(ns.tag());
        if (salt == null && make) {
          salt = Sealer.newSalt();
          write(ns.tag(), salt);
        }
        if (salt == null) {
          return null;
        }
        s = new Sealer(masters, ns, salt);
        sealers.put(ns.tag(), s);
      }
      return s;
    }
  }

  /**
   * Destroys the namespace's salt: no block sealed under it opens again. A later sealed put makes
   * a new one.
   *
   * @return whether there was a salt
   * @throws IOException if it cannot be deleted
   */
  synchronized boolean shred(Namespace namespace) throws IOException {
    sealers.remove(namespace.tag());
    boolean existed = device.delete(file(namespace.tag()));
    if (existed) {
      device.forceDirectory(dir);
      log.info("shredded {}: its salt in {} is deleted, and no block sealed under it opens", namespace,
          dir);
    }
    return existed;
  }

  /** Notes a sealed block that did not open. */
  void failed() {
    failures.increment();
  }

  /** Sealed blocks that did not open (their tag failed, their salt or key is gone). */
  long failures() {
    return failures.sum();
  }

  private Path file(long tag) {
    return dir.resolve(String.format("%016x.salt", tag));
  }

  /** The salt of a namespace, or null if it has none; a damaged salt file is an error. */
  private byte[] read(long tag) throws IOException {
    Path file = file(tag);
    if (!device.exists(file)) {
      return null;
    }
    ByteBuffer b = ByteBuffer.allocate(Sealer.SALT_RECORD_BYTES);
    try (DeviceFile f = device.open(file, false)) {
      if (f.size() != Sealer.SALT_RECORD_BYTES) {
        throw new IOException(file + " is damaged: the blocks sealed under it cannot be opened");
      }
      while (b.hasRemaining() && f.read(b, b.position()) > 0) {
        // until the whole file is read
      }
    }
    byte[] salt = b.hasRemaining() ? null : Sealer.saltOf(b.flip());
    if (salt == null) {
      throw new IOException(file + " is damaged: the blocks sealed under it cannot be opened");
    }
    return salt;
  }

  /** Writes a namespace's salt: to a temporary file, forced, renamed into place. */
  private void write(long tag, byte[] salt) throws IOException {
    device.prepareDirectory(dir);
    ByteBuffer b = Sealer.saltRecord(salt);
    Path tmp = dir.resolve(file(tag).getFileName() + ".tmp");
    device.delete(tmp); // left by a crash
    try (DeviceFile f = device.create(tmp)) {
      f.write(b, 0);
      f.force();
    }
    device.rename(tmp, file(tag));
    device.forceDirectory(dir);
  }
}
