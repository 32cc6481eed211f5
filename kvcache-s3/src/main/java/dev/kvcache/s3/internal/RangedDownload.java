package dev.kvcache.s3.internal;

import dev.kvcache.spi.Crc32c;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;

/**
 * One object read by ranged GETs under way at once, each into its own slice of the destination
 * and checksummed as it lands; the ranges' CRC32Cs are combined ({@link Crc32c#combine}) and
 * checked against the one the tier wrote in the object's metadata when it uploaded it, which
 * every range's answer carries. A single GET of a large object waits on one connection; several
 * fill the link.
 *
 * <p>The ranges must all come from one object: their answers must name the same ETag, the same
 * stored checksum, and the object's length the index knows. An object overwritten between them,
 * a store that answers a range with the whole object, or a range answered short is {@link
 * Outcome#CHANGED}: read it again whole.
 */
public final class RangedDownload {

  /** What the ranges found. */
  public enum Outcome {
    /** The object whole, its combined CRC32C the one it was stored with. */
    INTACT,
    /** The ranges agree on one object, whose bytes do not match its checksum: refuse it. */
    DAMAGED,
    /** Not one object of the length expected, or no checksum of the tier's: read it whole. */
    CHANGED
  }

  private final ByteBuffer destination;
  private final ByteBuffer target;
  private final int start;
  private final int length;
  private final List<Download> ranges = new ArrayList<>();
  private final List<CompletableFuture<Download>> answers = new ArrayList<>();
  private int crc32c;

  private RangedDownload(ByteBuffer destination, int length) {
    this.destination = destination;
    this.target = destination != null ? destination : ByteBuffer.allocateDirect(length);
    this.start = target.position();
    this.length = length;
  }

  /**
   * Sends the GETs of an object of {@code length} bytes in ranges of {@code rangeBytes}.
   *
   * @param request the object's GET, without a range
   * @param destination where the bytes go, from its position, with room for {@code length}
   *     bytes; null: a direct buffer of the object's length
   */
  public static RangedDownload start(S3AsyncClient s3, GetObjectRequest request,
      ByteBuffer destination, int length, int rangeBytes) {
    RangedDownload r = new RangedDownload(destination, length);
    for (int at = 0; at < length; at += rangeBytes) {
      int n = Math.min(rangeBytes, length - at);
      Download d = Download.range(r.target.slice(r.start + at, n));
      r.ranges.add(d);
      r.answers.add(s3.getObject(request.toBuilder()
          .range("bytes=" + at + "-" + (at + n - 1)).build(), d));
    }
    return r;
  }

  /**
   * Waits for every range and checks them.
   *
   * @throws CompletionException the first range's failure, once every range has ended
   */
  public Outcome finish() {
    CompletionException failed = null;
    for (CompletableFuture<Download> answer : answers) {
      try {
        answer.join();
      } catch (CompletionException e) {
        failed = failed == null ? e : failed;
      }
    }
    if (failed != null) {
      abandon();
      throw failed;
    }
    String etag = null;
    Integer stored = null;
    int crc = 0;
    for (int i = 0; i < ranges.size(); i++) {
      Download d = ranges.get(i);
      GetObjectResponse response = d.response();
      if (d.outcome() != Download.Outcome.INTACT || !ofLength(response.contentRange())) {
        return changed();
      }
      Integer checksum;
      try {
        checksum = Download.metadataChecksum(response);
      } catch (NumberFormatException e) {
        return changed();
      }
      if (checksum == null || i > 0 && (!checksum.equals(stored) || !etag.equals(response.eTag()))) {
        return changed();
      }
      etag = response.eTag();
      stored = checksum;
      crc = i == 0 ? d.crc32c() : Crc32c.combine(crc, d.crc32c(), d.length());
    }
    crc32c = crc;
    if (crc != stored) {
      abandon();
      return Outcome.DAMAGED;
    }
    if (destination != null) {
      destination.position(start + length);
    }
    return Outcome.INTACT;
  }

  private Outcome changed() {
    abandon();
    return Outcome.CHANGED;
  }

  /** Whether a range's {@code Content-Range} names an object of the length expected. */
  private boolean ofLength(String contentRange) {
    if (contentRange == null) {
      return false;
    }
    int slash = contentRange.lastIndexOf('/');
    return slash >= 0 && contentRange.substring(slash + 1).strip().equals(Integer.toString(length));
  }

  /**
   * Stops the ranges under way from writing more; the destination's position is left where it
   * was before.
   */
  public void abandon() {
    ranges.forEach(Download::abandon);
    if (destination != null) {
      destination.position(start);
    }
  }

  /**
   * The bytes of an intact object: the destination, its position past them, or the buffer made
   * for them (position 0, limit the object's length).
   */
  public ByteBuffer bytes() {
    return destination != null ? destination : target.duplicate().position(0).limit(length);
  }

  /** The object's CRC32C, combined from its ranges'; valid once {@link #finish} has run. */
  public int crc32c() {
    return crc32c;
  }

  /** The ETag the ranges' answers named. */
  public String eTag() {
    return ranges.get(0).response().eTag();
  }

  /** The object's user metadata, as the first range's answer gave it. */
  public Map<String, String> metadata() {
    return ranges.get(0).metadata();
  }
}
