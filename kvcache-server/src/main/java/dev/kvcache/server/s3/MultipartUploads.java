package dev.kvcache.server.s3;

import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import dev.kvcache.s3api.xml.RequestXml;
import io.netty.buffer.ByteBuf;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The multipart uploads under way: each one's parts, held in the buffers their bodies arrived in
 * until the upload is completed (and its object written as one block) or aborted. Parts take
 * memory outside the cache, at most {@code maxStagedBytes} of it for all uploads together; an
 * upload not touched for {@code idle} is dropped with its parts. Uploads live in this server's
 * memory only: a restart drops them, and a client that retries then gets {@code NoSuchUpload}.
 */
final class MultipartUploads {

  /** The smallest part S3 takes, but for an upload's last. */
  static final long MIN_PART_BYTES = 5L << 20;

  private final Map<String, Upload> uploads = new ConcurrentHashMap<>();
  private final AtomicLong staged = new AtomicLong();
  private final long maxStagedBytes;
  private final Duration idle;
  private final Clock clock;
  private final SecureRandom random = new SecureRandom();

  MultipartUploads(long maxStagedBytes, Duration idle, Clock clock) {
    this.maxStagedBytes = maxStagedBytes;
    this.idle = idle;
    this.clock = clock;
  }

  /** A new upload of object {@code key} of {@code bucket}, with the headers its object keeps. */
  Upload create(String bucket, String key, Map<String, String> headers) {
    dropIdle();
    byte[] id = new byte[16];
    random.nextBytes(id);
    Upload u = new Upload(HexFormat.of().formatHex(id), bucket, key, headers, clock.instant());
    uploads.put(u.id, u);
    return u;
  }

  /**
   * The upload {@code id} of object {@code key} of {@code bucket}.
   *
   * @throws S3Exception {@code NoSuchUpload} if there is none (never created, completed, aborted,
   *     dropped as idle, or created before the server's last start)
   */
  Upload find(String id, String bucket, String key) throws S3Exception {
    dropIdle();
    Upload u = id == null ? null : uploads.get(id);
    if (u == null || !u.bucket.equals(bucket) || !u.key.equals(key)) {
      throw new S3Exception(S3Error.NO_SUCH_UPLOAD, "no multipart upload " + id + " of " + key
          + " in " + bucket + " is under way: never created, completed, aborted, idle for "
          + idle + ", or created before the server's last start");
    }
    u.touched = clock.instant();
    return u;
  }

  /**
   * Reserves room for a part of {@code bytes}.
   *
   * @throws S3Exception {@code SlowDown} if the uploads' parts already take what they may
   */
  void reserve(long bytes) throws S3Exception {
    if (staged.addAndGet(bytes) > maxStagedBytes) {
      staged.addAndGet(-bytes);
      throw new S3Exception(S3Error.SLOW_DOWN, "the parts of the uploads under way take "
          + staged.get() + " bytes; a part of " + bytes + " more would pass the "
          + maxStagedBytes + " they may take (kvcache.s3.multipart-staging-bytes)");
    }
  }

  /** Gives back room reserved for {@code bytes}. */
  void unreserve(long bytes) {
    staged.addAndGet(-bytes);
  }

  /** The bytes the parts of all uploads take now. */
  long stagedBytes() {
    return staged.get();
  }

  /** Ends {@code upload}, completed or aborted: its parts are released, their room freed. */
  void end(Upload upload) {
    if (uploads.remove(upload.id, upload)) {
      for (Part p : upload.close()) {
        release(p);
      }
    }
  }

  private void release(Part p) {
    unreserve(p.length());
    p.bytes().release();
  }

  private void dropIdle() {
    Instant oldest = clock.instant().minus(idle);
    for (Upload u : uploads.values()) {
      if (u.touched.isBefore(oldest)) {
        end(u);
      }
    }
  }

  /** One upload's parts, by number. */
  final class Upload {
    final String id;
    final String bucket;
    final String key;
    final Map<String, String> headers;
    private final TreeMap<Integer, Part> parts = new TreeMap<>();
    private boolean closed;
    private volatile Instant touched;

    private Upload(String id, String bucket, String key, Map<String, String> headers,
        Instant created) {
      this.id = id;
      this.bucket = bucket;
      this.key = key;
      this.headers = Map.copyOf(headers);
      this.touched = created;
    }

    /**
     * Keeps {@code part}, which took room reserved for it, in place of a part of its number
     * uploaded before; released at once if the upload has ended meanwhile.
     */
    void put(Part part) {
      Part old;
      synchronized (this) {
        old = closed ? part : parts.put(part.number(), part);
      }
      if (old != null) {
        release(old);
      }
    }

    /**
     * The parts a completion names, in its order, each retained for the caller, who releases
     * them: every one uploaded with the ETag named, in ascending order, each but the last at
     * least {@link #MIN_PART_BYTES}.
     */
    synchronized List<Part> take(List<RequestXml.Part> named) throws S3Exception {
      if (named.isEmpty()) {
        throw new S3Exception(S3Error.MALFORMED_XML, "a completion names at least one part");
      }
      int last = 0;
      for (RequestXml.Part n : named) {
        if (n.number() < 1 || n.number() > RequestXml.MAX_PARTS) {
          throw new S3Exception(S3Error.INVALID_ARGUMENT, "part numbers are from 1 to "
              + RequestXml.MAX_PARTS + ", not " + n.number());
        }
        if (n.number() <= last) {
          throw new S3Exception(S3Error.INVALID_PART_ORDER, "part " + n.number() + " follows part "
              + last + ": a completion names its parts in ascending order");
        }
        last = n.number();
      }
      List<Part> taken = new ArrayList<>(named.size());
      for (int i = 0; i < named.size(); i++) {
        RequestXml.Part n = named.get(i);
        Part p = parts.get(n.number());
        if (p == null || !StoredObject.matches(n.etag(), p.etag())) {
          throw new S3Exception(S3Error.INVALID_PART, "part " + n.number() + (p == null
              ? " was not uploaded" : " has the ETag " + p.etag() + ", not " + n.etag()));
        }
        if (i < named.size() - 1 && p.length() < MIN_PART_BYTES) {
          throw new S3Exception(S3Error.ENTITY_TOO_SMALL, "part " + n.number() + " has "
              + p.length() + " bytes; every part but the last has at least " + MIN_PART_BYTES);
        }
        taken.add(p);
      }
      taken.forEach(p -> p.bytes().retain());
      return taken;
    }

    private synchronized List<Part> close() {
      closed = true;
      List<Part> all = new ArrayList<>(parts.values());
      parts.clear();
      return all;
    }
  }

  /**
   * A part: its bytes as they arrived, and their CRC32C.
   *
   * @param number its number, 1 to 10,000
   * @param bytes its bytes, owned by the upload until it ends
   * @param crc32c the CRC32C of its bytes
   */
  record Part(int number, ByteBuf bytes, int crc32c) {

    long length() {
      return bytes.readableBytes();
    }

    /** Its ETag, as an object's of the same bytes. */
    String etag() {
      return StoredObject.etag(crc32c, length());
    }
  }
}
