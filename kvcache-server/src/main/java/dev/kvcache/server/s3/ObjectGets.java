package dev.kvcache.server.s3;

import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.Namespace;
import dev.kvcache.s3api.Route;
import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import dev.kvcache.s3api.xml.RequestXml;
import dev.kvcache.server.api.OffLoop;
import dev.kvcache.server.api.ServedBlocks;
import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpMethod;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.ServerHttpRequest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;
import reactor.core.publisher.Mono;

/**
 * GetObject and HeadObject: an object's bytes (whole, one range, or its only part) straight from
 * the cache's lease, and what its record keeps (ETag, time, type, metadata, the client's checksum)
 * as headers, under the request's conditions.
 */
final class ObjectGets {

  /** S3's type for an object stored without one. */
  private static final String DEFAULT_TYPE = "binary/octet-stream";

  private final KvCache cache;
  private final OffLoop offLoop;
  private final ServedBlocks served;

  ObjectGets(KvCache cache, OffLoop offLoop, ServedBlocks served) {
    this.cache = cache;
    this.offLoop = offLoop;
    this.served = served;
  }

  Mono<MutableHttpResponse<?>> get(ServerHttpRequest<?> request, Namespace namespace,
      Route route) {
    boolean head = request.getMethod() == HttpMethod.HEAD;
    int part;
    try {
      part = partNumber(request, route);
    } catch (S3Exception e) {
      return Mono.error(e);
    }
    return offLoop.answer(() -> {
      BlockLease lease = cache.get(StoredObject.blockKey(namespace, route.key()));
      boolean handedOn = false;
      try {
        StoredObject object = lease.status() == GetStatus.HIT ? record(lease, route) : null;
        if (object == null) {
          throw new S3Exception(S3Error.NO_SUCH_KEY, "no object " + route.key() + " in "
              + route.bucket() + ": never stored, deleted, or evicted from the cache");
        }
        MutableHttpResponse<?> notModified = conditions(request, object, route);
        if (notModified != null) {
          return notModified;
        }
        long[] span = span(request, part, object.length());
        MutableHttpResponse<?> answer;
        long sent = span == null ? object.length() : span[1] - span[0];
        if (head) {
          answer = HttpResponse.ok().header(HttpHeaders.CONTENT_LENGTH, Long.toString(sent));
        } else if (sent == 0) {
          answer = HttpResponse.ok(Unpooled.EMPTY_BUFFER);
        } else {
          ByteBuf whole = served.getBody(route.bucket(), lease);
          handedOn = true;
          ByteBuf body = whole.retainedSlice(span == null ? 0 : (int) span[0], (int) sent);
          whole.release();
          answer = HttpResponse.ok(body);
        }
        if (span != null) {
          answer.status(HttpStatus.PARTIAL_CONTENT).header("Content-Range",
              "bytes " + span[0] + "-" + (span[1] - 1) + "/" + object.length());
        } else if (object.checksumAlgorithm() != null
            && "enabled".equalsIgnoreCase(request.getHeaders().get("x-amz-checksum-mode"))) {
          // whole objects only: a client checks a ranged answer's bytes against what it is sent
          answer.header(object.checksumAlgorithm().header(), object.checksum())
              .header("x-amz-checksum-type", "FULL_OBJECT");
        }
        return headers(answer, object, route);
      } finally {
        if (!handedOn) {
          lease.close();
        }
      }
    });
  }

  /** The record of the object a lease holds; null if it holds another (never expected). */
  private static StoredObject record(BlockLease lease, Route route) {
    try {
      StoredObject object = StoredObject.decode(lease.bytes());
      return object.key().equals(route.key()) ? object : null;
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /**
   * The answer {@code 304 Not Modified} if {@code If-None-Match} or {@code If-Modified-Since}
   * says so, null to answer with the object; an error if {@code If-Match} or {@code
   * If-Unmodified-Since} does not hold. As S3 (and RFC 9110) orders them, a present {@code
   * If-Match} decides in place of {@code If-Unmodified-Since}, and {@code If-None-Match} in place
   * of {@code If-Modified-Since}.
   */
  private static MutableHttpResponse<?> conditions(ServerHttpRequest<?> request,
      StoredObject object, Route route) throws S3Exception {
    String ifMatch = request.getHeaders().get("If-Match");
    String ifNoneMatch = request.getHeaders().get("If-None-Match");
    Instant modified = object.lastModified().truncatedTo(ChronoUnit.SECONDS);
    if (ifMatch != null) {
      if (!StoredObject.matches(ifMatch, object.etag())) {
        throw new S3Exception(S3Error.PRECONDITION_FAILED, "the object's ETag is "
            + object.etag() + ", not " + ifMatch);
      }
    } else {
      Instant since = date(request.getHeaders().get("If-Unmodified-Since"));
      if (since != null && modified.isAfter(since)) {
        throw new S3Exception(S3Error.PRECONDITION_FAILED, "the object was modified at "
            + modified + ", after the If-Unmodified-Since " + since);
      }
    }
    boolean unchanged;
    if (ifNoneMatch != null) {
      unchanged = StoredObject.matches(ifNoneMatch, object.etag());
    } else {
      Instant since = date(request.getHeaders().get("If-Modified-Since"));
      unchanged = since != null && !modified.isAfter(since);
    }
    return unchanged ? headers(HttpResponse.status(HttpStatus.NOT_MODIFIED), object, route) : null;
  }

  /**
   * The part a GET asks for ({@code partNumber}), 1 to 10,000; 0 if it asks for none.
   *
   * @throws S3Exception {@code InvalidArgument} for a number out of that range, {@code
   *     InvalidRequest} for a part and a range both
   */
  private static int partNumber(ServerHttpRequest<?> request, Route route) throws S3Exception {
    String part = route.query().get("partNumber");
    if (part == null) {
      return 0;
    }
    int n;
    try {
      n = Integer.parseInt(part.strip());
    } catch (NumberFormatException e) {
      n = -1;
    }
    if (n < 1 || n > RequestXml.MAX_PARTS) {
      throw new S3Exception(S3Error.INVALID_ARGUMENT, "partNumber must be from 1 to "
          + RequestXml.MAX_PARTS + ", not " + part);
    }
    if (request.getHeaders().get("Range") != null) {
      throw new S3Exception(S3Error.INVALID_REQUEST, "a GET takes a Range or a partNumber, "
          + "not both");
    }
    return n;
  }

  /**
   * The bytes to send, {@code {start, end}} with the end exclusive, or null for the whole object:
   * the request's {@code Range}, or its part (an object here is one part: part 1 is all of it).
   */
  private static long[] span(ServerHttpRequest<?> request, int part, long length)
      throws S3Exception {
    if (part > 1) {
      throw new S3Exception(S3Error.INVALID_PART_NUMBER, "the object has one part, not part "
          + part);
    }
    if (part == 1) {
      return length == 0 ? null : new long[] {0, length};
    }
    String range = request.getHeaders().get("Range");
    return range == null ? null : ByteRange.parse(range, length);
  }

  /**
   * The object's headers on {@code answer}: its ETag, time and the headers it was stored with,
   * each replaced by the request's {@code response-<header>} parameter if it has one (as a
   * presigned URL sets them).
   */
  private static MutableHttpResponse<?> headers(MutableHttpResponse<?> answer,
      StoredObject object, Route route) {
    answer.header(HttpHeaders.ETAG, object.etag())
        .header(HttpHeaders.LAST_MODIFIED, DateTimeFormatter.RFC_1123_DATE_TIME.format(
            ZonedDateTime.ofInstant(object.lastModified(), ZoneOffset.UTC)))
        .header("Accept-Ranges", "bytes");
    Map<String, String> headers = new LinkedHashMap<>(object.headers());
    headers.putIfAbsent("content-type", DEFAULT_TYPE);
    for (String name : StoredObject.KEPT_HEADERS) {
      if (name.startsWith("x-amz-")) {
        continue; // S3's response-* overrides are of the HTTP headers alone
      }
      String override = route.query().get("response-" + name);
      if (override != null) {
        headers.put(name, override);
      }
    }
    headers.forEach(answer::header);
    return answer;
  }

  /** An HTTP date, or null for none or one that cannot be read (which HTTP says to ignore). */
  private static Instant date(String text) {
    if (text == null) {
      return null;
    }
    try {
      return ZonedDateTime.parse(text.strip(), DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
    } catch (DateTimeParseException e) {
      return null;
    }
  }
}
