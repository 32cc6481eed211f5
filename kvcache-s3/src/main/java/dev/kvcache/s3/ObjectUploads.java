package dev.kvcache.s3;

import dev.kvcache.BlockKey;
import dev.kvcache.s3.internal.DeleteQueue;
import dev.kvcache.s3.internal.Download;
import dev.kvcache.s3.internal.Folders;
import dev.kvcache.s3.internal.ObjectNames;
import dev.kvcache.s3.internal.ObjectNames.Folder;
import dev.kvcache.s3.internal.ObjectTags;
import dev.kvcache.s3.internal.Requests;
import dev.kvcache.s3.internal.Requests.Op;
import dev.kvcache.s3.internal.StoreFailure;
import dev.kvcache.s3.internal.StoreState;
import dev.kvcache.spi.Crc32c;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * An object tier's uploads: one PUT per block, its CRC32C in {@code x-amz-checksum-crc32c} (which
 * the store checks on arrival) and in the object's metadata, a sealed namespace's block sealed
 * first ({@link ObjectSeals}); none while the store is backing off.
 */
final class ObjectUploads {

  private static final Logger log = LoggerFactory.getLogger(S3Tier.class);

  private final String bucket;
  private final S3AsyncClient s3;
  private final ObjectNames names;
  private final StoreState store;
  private final Requests requests;
  private final DeleteQueue deletes;
  private final Folders folders;
  private final ObjectSeals seals;
  private final StoreFailure storeFailed;
  private final LongAdder bytesUploaded = new LongAdder();
  private final LongAdder notStored = new LongAdder();

  /**
   * @param seals the sealed namespaces' salts; null if none is sealed
   * @param storeFailed records a failed request; whether it was the store's failure
   */
  ObjectUploads(String bucket, S3AsyncClient s3, ObjectNames names, StoreState store,
      Requests requests, DeleteQueue deletes, Folders folders, ObjectSeals seals,
      StoreFailure storeFailed) {
    this.bucket = bucket;
    this.s3 = s3;
    this.names = names;
    this.store = store;
    this.requests = requests;
    this.deletes = deletes;
    this.folders = folders;
    this.seals = seals;
    this.storeFailed = storeFailed;
  }

  /** Whether the blocks of {@code folder} are sealed before they are uploaded. */
  boolean seals(Folder folder) {
    return seals != null && seals.seals(folder);
  }

  /**
   * Uploads block {@code key} from {@code body} (position to limit, read in place) into {@code
   * folder}, with its checksum {@code crc32c} (not used for a sealed block, whose object is
   * checksummed once sealed) and {@code tag} (null for none).
   *
   * @return the object's length, or -1 if it was not stored (counted)
   */
  int upload(BlockKey key, Folder folder, ByteBuffer body, int crc32c, byte[] tag) {
    long admitted = System.nanoTime();
    if (!store.available(admitted)) {
      notStored.increment();
      return -1;
    }
    Map<String, String> metadata = new HashMap<>();
    if (seals(folder)) {
      try {
        body = ObjectSeals.seal(seals.forWrite(folder), key, body);
      } catch (CompletionException e) {
        log.warn("block {} not stored: the salt of its namespace cannot be read or made: {}",
            key, e.getCause().toString());
        notStored.increment();
        return -1;
      }
      crc32c = Crc32c.of(body);
      metadata.put(ObjectSeals.SEALED_METADATA, "aes-256-gcm");
    }
    folders.describe(folder);
    String name = names.block(folder, key);
    try {
      deletes.makeWay(name);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      store.abandoned(System.nanoTime());
      notStored.increment();
      return -1;
    }
    int length = body.remaining();
    metadata.put(Download.CRC_METADATA, String.format("%08x", crc32c));
    String kept = tag == null ? null : ObjectTags.encode(key, tag);
    if (kept != null) {
      metadata.put(ObjectTags.METADATA, kept);
    }
    PutObjectRequest request = PutObjectRequest.builder()
        .bucket(bucket)
        .key(name)
        .contentLength((long) length)
        .contentType("application/octet-stream")
        .checksumCRC32C(Crc32c.toBase64(crc32c))
        .metadata(metadata)
        .build();
    long start = System.nanoTime();
    try {
      s3.putObject(request, AsyncRequestBody.fromRemainingByteBufferUnsafe(body)).join();
      requests.sent(Op.PUT, System.nanoTime() - start);
      store.succeeded();
    } catch (CompletionException e) {
      requests.sent(Op.PUT, System.nanoTime() - start);
      if (storeFailed.record(e.getCause(), admitted)) {
        requests.failed(Op.PUT);
      } else {
        log.warn("the object store refused block {}: {}", key, e.getCause().toString());
      }
      notStored.increment();
      return -1;
    }
    bytesUploaded.add(length);
    return length;
  }

  /** Object bytes uploaded. */
  long bytesUploaded() {
    return bytesUploaded.sum();
  }

  /** Uploads not stored because the store failed or the tier was backing off. */
  long notStored() {
    return notStored.sum();
  }
}
