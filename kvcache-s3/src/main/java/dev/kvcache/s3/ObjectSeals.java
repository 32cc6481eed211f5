package dev.kvcache.s3;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import dev.kvcache.s3.internal.ObjectNames;
import dev.kvcache.s3.internal.ObjectNames.Folder;
import dev.kvcache.s3.internal.Requests;
import dev.kvcache.s3.internal.Requests.Op;
import dev.kvcache.s3.internal.StoreFailure;
import dev.kvcache.seal.MasterKeys;
import dev.kvcache.seal.Sealer;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.services.s3.S3AsyncClient;

/**
 * The object tier's sealed namespaces ({@link S3TierConfig.Builder#sealing}): the salt of each,
 * kept as the object {@code <prefix><folder>/}{@value #SALT} ({@link Sealer#saltRecord}) in the
 * namespace's folder, shared by every server of the fleet, and a {@link Sealer} per namespace
 * under the master keys. A namespace's salt is made by the first sealed upload of any server,
 * written only if the folder has none ({@code If-None-Match: *}), so that two servers that race
 * agree on the one stored; {@link #shred} deletes it, after which no object sealed under it opens
 * again. A server reads a salt again once it has held it for {@link #RECHECK}: a namespace
 * another server shredded stops opening here by then.
 */
final class ObjectSeals {

  /** The name of a folder's salt object. */
  static final String SALT = "seal.salt";
  /** The user metadata key that marks a sealed object (its value: {@code aes-256-gcm}). */
  static final String SEALED_METADATA = "kvcache-sealed";
  /** How long a salt read from the bucket is used before it is read again. */
  static final Duration RECHECK = Duration.ofSeconds(60);

  private static final Logger log = LoggerFactory.getLogger(ObjectSeals.class);

  private final S3AsyncClient s3;
  private final String bucket;
  private final ObjectNames names;
  private final Requests requests;
  private final StoreFailure storeFailure;
  private final MasterKeys masters;
  private final Set<Namespace> sealed;
  /** Sealers by folder id, with when their salt was read (System.nanoTime). */
  private final Map<String, Held> held = new ConcurrentHashMap<>();
  private final LongAdder failures = new LongAdder();
  private final long recheckNanos;

  private record Held(Sealer sealer, byte[] salt, long readAt) {}

  ObjectSeals(S3AsyncClient s3, String bucket, ObjectNames names, Requests requests,
      StoreFailure storeFailure, MasterKeys masters, Set<Namespace> sealed, Duration recheck) {
    this.s3 = s3;
    this.bucket = bucket;
    this.names = names;
    this.requests = requests;
    this.storeFailure = storeFailure;
    this.masters = masters;
    this.sealed = Set.copyOf(sealed);
    this.recheckNanos = recheck.toNanos();
  }

  /** Whether the namespace of {@code folder} is sealed. */
  boolean seals(Folder folder) {
    return folder.namespace() != null && sealed.contains(folder.namespace());
  }

  /** Whether {@code metadata}, an object's user metadata, marks it sealed (any case of the key). */
  static boolean sealedObject(Map<String, String> metadata) {
    for (String k : metadata.keySet()) {
      if (k.equalsIgnoreCase(SEALED_METADATA)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The sealer of a sealed namespace's folder, its salt made if the bucket has none.
   *
   * @throws CompletionException if the store failed to read or write the salt
   */
  Sealer forWrite(Folder folder) {
    Held h = current(folder);
    if (h != null) {
      return h.sealer();
    }
    synchronized (this) {
      h = current(folder);
      if (h == null) {
        h = make(folder);
      }
      return h.sealer();
    }
  }

  /**
   * The sealer of the folder's namespace; null if it has no salt (never sealed, or shredded).
   *
   * @throws CompletionException if the store failed to answer, or the salt is damaged
   */
  Sealer forRead(Folder folder) {
    if (folder.namespace() == null) {
      return null;
    }
    Held h = current(folder);
    return h == null ? null : h.sealer();
  }

  /** Seals {@code block} (position to limit, left as it was) into a new direct buffer. */
  static ByteBuffer seal(Sealer sealer, BlockKey key, ByteBuffer block) {
    ByteBuffer out = ByteBuffer.allocateDirect(Sealer.sealedLength(block.remaining()));
    sealer.seal(key, block.duplicate(), out);
    return out.flip();
  }

  /**
   * Deletes the namespace's salt: no object sealed under it opens again, on this server at once
   * and on the fleet's others within {@link #RECHECK}. A later sealed upload makes a new salt.
   *
   * @return whether there was a salt
   * @throws IllegalStateException if the store failed to delete it
   */
  synchronized boolean shred(Namespace namespace) {
    Folder folder = ObjectNames.folder(namespace);
    held.remove(folder.id());
    String name = saltName(folder);
    boolean existed = read(folder) != null;
    long start = System.nanoTime();
    try {
      s3.deleteObject(b -> b.bucket(bucket).key(name)).join();
      requests.sent(Op.DELETE, System.nanoTime() - start);
    } catch (CompletionException e) {
      requests.sent(Op.DELETE, System.nanoTime() - start);
      storeFailure.record(e.getCause(), start);
      throw new IllegalStateException("the object store failed to delete the salt " + name
          + " of " + namespace + ": " + e.getCause().getMessage(), e.getCause());
    }
    held.remove(folder.id());
    if (existed) {
      log.info("shredded {}: its salt {} is deleted, and no object sealed under it opens",
          namespace, name);
    }
    return existed;
  }

  /** Notes a sealed object that did not open. */
  void failed() {
    failures.increment();
  }

  /** Sealed objects that did not open (their tag failed, their salt or key is gone). */
  long failures() {
    return failures.sum();
  }

  private String saltName(Folder folder) {
    return names.prefix() + folder.id() + "/" + SALT;
  }

  /**
   * The folder's salt as held, read again if held for {@link #RECHECK}; null if the bucket has
   * none.
   */
  private Held current(Folder folder) {
    Held h = held.get(folder.id());
    long now = System.nanoTime();
    if (h != null && now - h.readAt() < recheckNanos) {
      return h;
    }
    byte[] salt = read(folder);
    if (salt == null) {
      held.remove(folder.id());
      return null;
    }
    Held fresh = h != null && Arrays.equals(h.salt(), salt)
        ? new Held(h.sealer(), salt, now)
        : new Held(new Sealer(masters, folder.namespace(), salt), salt, now);
    held.put(folder.id(), fresh);
    return fresh;
  }

  /** Writes a new salt if the folder has none, and holds the one the bucket keeps. */
  private Held make(Folder folder) {
    byte[] salt = Sealer.newSalt();
    ByteBuffer body = Sealer.saltRecord(salt);
    long start = System.nanoTime();
    try {
      s3.putObject(b -> b.bucket(bucket).key(saltName(folder)).ifNoneMatch("*")
              .contentType("application/octet-stream").contentLength((long) Sealer.SALT_RECORD_BYTES),
          AsyncRequestBody.fromByteBuffer(body)).join();
      requests.sent(Op.PUT, System.nanoTime() - start);
    } catch (CompletionException e) {
      requests.sent(Op.PUT, System.nanoTime() - start);
      if (!ObjectReads.conditionFailed(e.getCause())) {
        storeFailure.record(e.getCause(), start);
        throw e;
      }
      // another server wrote the folder's salt first: the bucket's is the one
    }
    // read back: a store that ignores If-None-Match keeps the last salt written
    Held h = current(folder);
    if (h == null) {
      throw new CompletionException(new IllegalStateException("the salt of " + folder.namespace()
          + " is not in the bucket after it was written"));
    }
    return h;
  }

  /**
   * The salt object of a folder; null if there is none.
   *
   * @throws CompletionException if the store failed, or the object is damaged (a salt that
   *     cannot be read must not be taken as none, which would make a new one over it)
   */
  private byte[] read(Folder folder) {
    String name = saltName(folder);
    long start = System.nanoTime();
    byte[] body;
    try {
      body = s3.getObject(b -> b.bucket(bucket).key(name), AsyncResponseTransformer.toBytes())
          .join().asByteArray();
      requests.sent(Op.GET, System.nanoTime() - start);
    } catch (CompletionException e) {
      requests.sent(Op.GET, System.nanoTime() - start);
      if (ObjectReads.missing(e.getCause())) {
        return null;
      }
      storeFailure.record(e.getCause(), start);
      throw e;
    }
    byte[] salt = Sealer.saltOf(ByteBuffer.wrap(body));
    if (salt == null) {
      log.warn("the salt {} is damaged: the objects sealed under it cannot be opened", name);
      throw new CompletionException(new IllegalStateException("the salt " + name
          + " is damaged"));
    }
    return salt;
  }
}
