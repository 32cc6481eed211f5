package dev.kvcache.disk;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import dev.kvcache.disk.device.StorageDevice;
import dev.kvcache.seal.MasterKeys;
import dev.kvcache.seal.Sealer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.channels.FileChannel;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The disk tier's sealed namespaces ({@link DiskTierConfig#sealed()}): the salt of each, kept in
 * {@code salts/<namespace tag in hex>.salt} in the tier's directory (32 bytes and their CRC32C,
 * written to a temporary file, forced and renamed into place), and a {@link Sealer} per namespace
 * under the master keys. A namespace's salt is made at its first sealed put; {@link #shred}
 * deletes it, after which no block sealed under it opens again, whatever copies of the files
 * survive.
 */
final class Seals {

  private static final Logger log = LoggerFactory.getLogger(Seals.class);
  private static final int SALT_FILE_BYTES = Sealer.SALT_BYTES + 4;

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
    if (ns == null || !sealed.contains(ns.tag())) {
      return null;
    }
    Sealer s = sealers.get(ns.tag());
    if (s != null) {
      return s;
    }
    synchronized (this) {
      s = sealers.get(ns.tag());
      if (s == null) {
        byte[] salt = read(ns.tag());
        if (salt == null) {
          salt = Sealer.newSalt();
          write(ns.tag(), salt);
        }
        s = new Sealer(masters, ns, salt);
        sealers.put(ns.tag(), s);
      }
      return s;
    }
  }

  /**
   * The sealer of the namespace whose tag a sealed record carries; null if its salt is gone (the
   * namespace was shredded) or damaged, or the namespace is not known in this JVM.
   */
  Sealer forRead(long namespaceTag) {
    Sealer s = sealers.get(namespaceTag);
    if (s != null) {
      return s;
    }
    Namespace ns = Namespace.ofTag(namespaceTag).orElse(null);
    if (ns == null) {
      return null;
    }
    synchronized (this) {
      s = sealers.get(namespaceTag);
      if (s == null) {
        byte[] salt;
        try {
          salt = read(namespaceTag);
        } catch (IOException e) {
          log.warn("cannot read the salt of {} in {}: {}", ns, dir, e.toString());
          return null;
        }
        if (salt == null) {
          return null;
        }
        s = new Sealer(masters, ns, salt);
        sealers.put(namespaceTag, s);
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
    boolean existed = Files.deleteIfExists(file(namespace.tag()));
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
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file(tag));
    } catch (NoSuchFileException e) {
      return null;
    }
    ByteBuffer b = ByteBuffer.wrap(bytes);
    CRC32C crc = new CRC32C();
    crc.update(bytes, 0, Math.min(bytes.length, Sealer.SALT_BYTES));
    if (bytes.length != SALT_FILE_BYTES || b.getInt(Sealer.SALT_BYTES) != (int) crc.getValue()) {
      throw new IOException(file(tag) + " is damaged: the blocks sealed under it cannot be opened");
    }
    byte[] salt = new byte[Sealer.SALT_BYTES];
    b.get(0, salt);
    return salt;
  }

  private void write(long tag, byte[] salt) throws IOException {
    Files.createDirectories(dir);
    CRC32C crc = new CRC32C();
    crc.update(salt);
    ByteBuffer b = ByteBuffer.allocate(SALT_FILE_BYTES).put(salt).putInt((int) crc.getValue())
        .flip();
    Path tmp = dir.resolve(file(tag).getFileName() + ".tmp");
    try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE,
        StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
      while (b.hasRemaining()) {
        ch.write(b);
      }
      ch.force(true);
    }
    try {
      Files.move(tmp, file(tag), StandardCopyOption.ATOMIC_MOVE);
    } catch (AtomicMoveNotSupportedException e) {
      Files.move(tmp, file(tag), StandardCopyOption.REPLACE_EXISTING);
    }
    device.forceDirectory(dir);
  }
}
