package dev.kvcache.server.s3;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.Namespace;
import dev.kvcache.PutStatus;
import dev.kvcache.s3api.Route;
import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import dev.kvcache.s3api.auth.Payload;
import dev.kvcache.s3api.auth.RequestParts;
import dev.kvcache.s3api.auth.Verified;
import dev.kvcache.s3api.body.ChecksumAlgorithm;
import dev.kvcache.s3api.xml.RequestXml;
import dev.kvcache.s3api.xml.S3Xml;
import dev.kvcache.server.api.BodyWriter;
import dev.kvcache.spi.Crc32c;
import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.ServerHttpRequest;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The S3 operations that store objects: PutObject, its conditions, and multipart uploads. An
 * object's block is its bytes followed by its {@link StoredObject} record, written once into the
 * cache's writer as the body arrives; a multipart upload's parts wait in the buffers they arrived
 * in ({@link MultipartUploads}) and are copied into the object's block when it is completed.
 */
final class ObjectPuts {

  /** The largest CompleteMultipartUpload body taken: 10,000 parts, each well under 200 bytes. */
  private static final int MAX_COMPLETION_BYTES = 2 << 20;

  private final KvCache cache;
  private final int maxBlockBytes;
  private final Scheduler blocking;
  private final MultipartUploads uploads;
  private final ObjectNames names;
  private final Clock clock;

  ObjectPuts(KvCache cache, int maxBlockBytes, Scheduler blocking, MultipartUploads uploads,
      ObjectNames names, Clock clock) {
    this.cache = cache;
    this.names = names;
    this.maxBlockBytes = maxBlockBytes;
    this.blocking = blocking;
    this.uploads = uploads;
    this.clock = clock;
  }

  /**
   * PutObject: the body, checked as it arrives, then the object's record, into the block's writer;
   * its {@code If-None-Match: *} or {@code If-Match} checked first, against what the cache holds
   * then (not atomically with the write).
   */
  Mono<MutableHttpResponse<?>> put(ServerHttpRequest<?> request, RequestParts parts,
      Verified signed, Namespace namespace, String bucket, String key) throws S3Exception {
    Payload payload = S3Messages.payload(parts, signed);
    long length = S3Messages.objectLength(request, parts, payload);
    Map<String, String> headers = S3Messages.objectHeaders(request);
    ObjectBody body = new ObjectBody(parts, payload, signed, length);
    ChecksumAlgorithm kept = body.keptAlgorithm();
    long blockLength = blockLength(length, StoredObject.recordBytes(key, kept, headers));
    BlockKey block = StoredObject.blockKey(namespace, key);
    Instant now = clock.instant();
    AtomicReference<ObjectNames.Listed> listed = new AtomicReference<>();
    return conditions(parts, block, key)
        .onErrorResume(e -> S3Messages.drain(request).then(Mono.error(e)))
        .then(Mono.defer(() -> BodyWriter.store(cache, block,
            body.decode(S3Messages.body(request)).concatWith(Mono.fromCallable(() -> {
              StoredObject object = new StoredObject(key, length, body.crc32c(), now, kept,
                  body.keptChecksum(), headers);
              listed.set(names.writing(block, bucket, object));
              return Unpooled.wrappedBuffer(object.encode());
            })),
            blockLength, maxBlockBytes, blocking, null, UnaryOperator.identity())))
        .doFinally(signal -> {
          if (listed.get() != null) {
            names.written(block, listed.get());
          }
        })
        .flatMap(status -> Mono.fromCallable(() -> {
          checkStored(status, length);
          MutableHttpResponse<?> ok = HttpResponse.ok().header(HttpHeaders.ETAG,
              StoredObject.etag(body.crc32c(), length));
          return kept == null ? ok : ok.header(kept.header(), body.keptChecksum())
              .header("x-amz-checksum-type", "FULL_OBJECT");
        }));
  }

  /** CreateMultipartUpload: a new upload, whose object will keep the headers sent with it. */
  MutableHttpResponse<?> create(ServerHttpRequest<?> request, Route route) throws S3Exception {
    checkUploadChecksum(request.getHeaders().get("x-amz-checksum-algorithm"),
        request.getHeaders().get("x-amz-checksum-type"));
    MultipartUploads.Upload u = uploads.create(route.bucket(), route.key(),
        S3Messages.objectHeaders(request));
    return S3Messages.xml(S3Xml.multipartUploadCreated(route.bucket(), route.key(), u.id));
  }

  /**
   * Refuses the checksum arguments of a CreateMultipartUpload that S3 refuses: an algorithm it
   * does not know, a type other than {@code COMPOSITE} and {@code FULL_OBJECT}, a type without
   * an algorithm, and the combinations S3 does not compute (a full-object SHA, a composite
   * CRC64NVME). The parts' checksums are checked as they arrive, whatever these say; the object
   * keeps no checksum of its parts.
   */
  private static void checkUploadChecksum(String algorithm, String typeSent) throws S3Exception {
    String type = typeSent == null ? null : typeSent.toUpperCase(Locale.ROOT);
    ChecksumAlgorithm a = algorithm == null ? null : ChecksumAlgorithm.named(algorithm)
        .orElseThrow(() -> new S3Exception(S3Error.INVALID_REQUEST, "x-amz-checksum-algorithm "
            + "names " + algorithm + ", not a checksum S3 knows"));
    if (type == null) {
      return;
    }
    if (!type.equals("COMPOSITE") && !type.equals("FULL_OBJECT")) {
      throw new S3Exception(S3Error.INVALID_REQUEST, "x-amz-checksum-type is COMPOSITE or "
          + "FULL_OBJECT, not " + typeSent);
    }
    if (a == null) {
      throw new S3Exception(S3Error.INVALID_REQUEST, "x-amz-checksum-type " + type + " needs an "
          + "x-amz-checksum-algorithm");
    }
    boolean crc = a == ChecksumAlgorithm.CRC32 || a == ChecksumAlgorithm.CRC32C;
    if (type.equals("FULL_OBJECT") ? !crc && a != ChecksumAlgorithm.CRC64NVME
        : a == ChecksumAlgorithm.CRC64NVME) {
      throw new S3Exception(S3Error.INVALID_REQUEST, "S3 computes no " + type + " " + a
          + " checksum of a multipart object");
    }
  }

  /**
   * UploadPart: the body, checked as a PutObject's, kept in the buffers it arrives in until its
   * upload ends; its ETag is an object's of the same bytes.
   */
  Mono<MutableHttpResponse<?>> uploadPart(ServerHttpRequest<?> request, RequestParts parts,
      Verified signed, Route route) throws S3Exception {
    int number = partNumber(route.query().get("partNumber"));
    MultipartUploads.Upload upload =
        uploads.find(route.query().get("uploadId"), route.bucket(), route.key());
    Payload payload = S3Messages.payload(parts, signed);
    long length = S3Messages.objectLength(request, parts, payload);
    blockLength(length, 0);
    ObjectBody body = new ObjectBody(parts, payload, signed, length);
    uploads.reserve(length);
    AtomicBoolean kept = new AtomicBoolean();
    return Mono.<MutableHttpResponse<?>, CompositeByteBuf>using(
            () -> ByteBufAllocator.DEFAULT.compositeDirectBuffer(Integer.MAX_VALUE),
            whole -> body.decode(S3Messages.body(request))
                .<Void>handle((b, sink) -> {
                  if (whole.readableBytes() + (long) b.readableBytes() > length) {
                    b.release();
                    sink.error(new S3Exception(S3Error.INCOMPLETE_BODY, "the part is longer "
                        + "than its length, " + length + " bytes"));
                  } else {
                    whole.addComponent(true, b);
                  }
                })
                .then(Mono.fromCallable(() -> {
                  if (whole.readableBytes() != length) {
                    throw new S3Exception(S3Error.INCOMPLETE_BODY, "the part ended after "
                        + whole.readableBytes() + " of its " + length + " bytes");
                  }
                  MultipartUploads.Part part =
                      new MultipartUploads.Part(number, whole.retain(), body.crc32c());
                  kept.set(true);
                  upload.put(part);
                  return HttpResponse.ok().header(HttpHeaders.ETAG, part.etag());
                })),
            CompositeByteBuf::release)
        .doFinally(signal -> {
          if (!kept.get()) {
            uploads.unreserve(length);
          }
        });
  }

  /**
   * CompleteMultipartUpload: the parts the body names, checked (uploaded, with those ETags, in
   * order, large enough), copied into the object's block with its record; the CRC32C of what was
   * written must be that of the parts as they arrived, or nothing is stored. The upload ends when
   * its object is stored; one that could not be stored (no room now) may be completed again.
   */
  Mono<MutableHttpResponse<?>> complete(ServerHttpRequest<?> request, RequestParts parts,
      Verified signed, Namespace namespace, Route route) throws S3Exception {
    MultipartUploads.Upload upload =
        uploads.find(route.query().get("uploadId"), route.bucket(), route.key());
    BlockKey block = StoredObject.blockKey(namespace, route.key());
    // the object's URL, as the request addressed it (path-style or virtual-host)
    String location = (request.isSecure() ? "https://" : "http://")
        + request.getHeaders().get(HttpHeaders.HOST) + request.getUri().getRawPath();
    // its x-amz-checksum-* headers are the object's, which is not kept: not checked
    return S3Messages.xmlBody(request, parts, signed, MAX_COMPLETION_BYTES, false)
        .flatMap(xml -> Mono.fromCallable(() -> {
          List<MultipartUploads.Part> taken = upload.take(RequestXml.completion(xml));
          try {
            return completed(upload, block, taken, location);
          } finally {
            taken.forEach(p -> p.bytes().release());
          }
        }).subscribeOn(blocking));
  }

  private MutableHttpResponse<?> completed(MultipartUploads.Upload upload, BlockKey block,
      List<MultipartUploads.Part> taken, String location) throws S3Exception {
    long length = 0;
    int crc = 0;
    for (MultipartUploads.Part p : taken) {
      crc = Crc32c.combine(crc, p.crc32c(), p.length());
      length += p.length();
    }
    StoredObject object = new StoredObject(upload.key, length, crc, clock.instant(), null, null,
        upload.headers);
    byte[] record = object.encode();
    try (BlockWriter writer = cache.writer(block, (int) blockLength(length, record.length))) {
      if (writer.rejection().isPresent()) {
        // not admitted (a cache may drop what it is given) is answered as stored, as a PUT is
        checkStored(writer.rejection().get(), length);
        uploads.end(upload);
        return completion(upload, StoredObject.etag(crc, length), location);
      }
      for (MultipartUploads.Part p : taken) {
        for (ByteBuffer piece : p.bytes().nioBuffers()) {
          writer.write(piece);
        }
      }
      writer.write(ByteBuffer.wrap(record));
      int expected = Crc32c.combine(crc, Crc32c.of(ByteBuffer.wrap(record)), record.length);
      if (writer.crc32c().isPresent() && writer.crc32c().getAsInt() != expected) {
        throw new IllegalStateException("the parts of " + upload.key + " changed as they were "
            + "copied into its block; nothing was stored");
      }
      ObjectNames.Listed listed = names.writing(block, upload.bucket, object);
      try {
        checkStored(writer.commit(), length);
      } finally {
        names.written(block, listed);
      }
      uploads.end(upload);
      return completion(upload, StoredObject.etag(crc, length), location);
    }
  }

  /** The completion's answer; {@code location}, the object's URL. */
  private static MutableHttpResponse<?> completion(MultipartUploads.Upload upload, String etag,
      String location) {
    return S3Messages.xml(S3Xml.multipartUploadCompleted(location, upload.bucket, upload.key,
        etag)).header(HttpHeaders.ETAG, etag);
  }

  /** AbortMultipartUpload: the upload and its parts dropped. */
  MutableHttpResponse<?> abort(Route route) throws S3Exception {
    uploads.end(uploads.find(route.query().get("uploadId"), route.bucket(), route.key()));
    return HttpResponse.noContent();
  }

  /**
   * Nothing if the request sets no condition; else an error if its condition does not hold: {@code
   * If-None-Match: *} where the cache holds the object, {@code If-Match} where it does not hold
   * one with that ETag ({@code 404} if none).
   */
  private Mono<Void> conditions(RequestParts parts, BlockKey block, String key)
      throws S3Exception {
    String ifNoneMatch = parts.first("If-None-Match");
    String ifMatch = parts.first("If-Match");
    if (ifNoneMatch == null && ifMatch == null) {
      return Mono.empty();
    }
    if (ifNoneMatch != null && !ifNoneMatch.strip().equals("*")) {
      throw new S3Exception(S3Error.NOT_IMPLEMENTED, "If-None-Match on a PutObject takes * "
          + "only, not " + ifNoneMatch);
    }
    Mono<Void> check = Mono.fromCallable(() -> {
      try (BlockLease lease = cache.get(block)) {
        boolean held = lease.status() == GetStatus.HIT;
        if (ifNoneMatch != null && held) {
          throw new S3Exception(S3Error.PRECONDITION_FAILED,
              "the object " + key + " exists, and the request has If-None-Match: *");
        }
        if (ifMatch != null) {
          if (!held) {
            throw new S3Exception(S3Error.NO_SUCH_KEY, "no object " + key + " to match If-Match "
                + ifMatch);
          }
          String etag = StoredObject.decode(lease.bytes()).etag();
          if (!StoredObject.matches(ifMatch, etag)) {
            throw new S3Exception(S3Error.PRECONDITION_FAILED,
                "the object's ETag is " + etag + ", not " + ifMatch);
          }
        }
      }
      return null;
    });
    return cache.readsMayWait() ? check.subscribeOn(blocking) : check;
  }

  /** The length of an object's block, checked against the largest block. */
  private long blockLength(long objectLength, int recordBytes) throws S3Exception {
    long n = objectLength + recordBytes;
    if (n > maxBlockBytes) {
      throw new S3Exception(S3Error.ENTITY_TOO_LARGE, "an object of " + objectLength
          + " bytes, with the " + recordBytes + " of its record, is larger than this server's "
          + "largest block, " + maxBlockBytes + " bytes (kvcache.cache.max-block-bytes)");
    }
    return n;
  }

  /** Throws S3's error for a block the cache refused; returns for one it took. */
  private void checkStored(PutStatus status, long length) throws S3Exception {
    switch (status) {
      case STORED, NOT_ADMITTED -> { }
      case REJECTED_TOO_LARGE -> throw new S3Exception(S3Error.ENTITY_TOO_LARGE, "an object of "
          + length + " bytes is larger than the cache's largest block");
      case REJECTED_NO_SPACE, REJECTED_NOT_DURABLE -> throw new S3Exception(S3Error.SLOW_DOWN,
          "the object was not stored: no room for it now ("
              + String.join("; ", cache.health().problems()) + ")");
      default -> throw new IllegalStateException(status.toString());
    }
  }

  private static int partNumber(String text) throws S3Exception {
    try {
      int n = Integer.parseInt(text == null ? "" : text.strip());
      if (n >= 1 && n <= RequestXml.MAX_PARTS) {
        return n;
      }
    } catch (NumberFormatException e) {
      // refused below
    }
    throw new S3Exception(S3Error.INVALID_ARGUMENT, "partNumber must be from 1 to "
        + RequestXml.MAX_PARTS + ", not " + text);
  }
}
