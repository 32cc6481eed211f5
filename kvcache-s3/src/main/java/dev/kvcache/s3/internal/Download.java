package dev.kvcache.s3.internal;

import dev.kvcache.spi.Crc32c;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.zip.CRC32C;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.core.async.SdkPublisher;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;

/**
 * Receives one object's bytes straight into their destination: the caller's buffer, or a direct
 * buffer of the object's length; the CRC32C is computed over each part right after it is copied,
 * while it is in the CPU's caches. The result says whether the object was whole and matched the
 * checksum it was stored with.
 *
 * <p>A download that is {@linkplain #abandon() abandoned} (its caller stopped waiting) writes
 * nothing more into the destination: the caller may reuse its buffer at once.
 */
public final class Download implements AsyncResponseTransformer<GetObjectResponse, Download> {

  /** The user metadata key the tier stores each block's CRC32C under, as well (8 hex digits). */
  public static final String CRC_METADATA = "kvcache-crc32c";

  /** What a download found. */
  public enum Outcome {
    /** The object's bytes, checked against its checksum. */
    INTACT,
    /** The object's bytes do not match its checksum, or it has none: refused. */
    DAMAGED,
    /** The object does not fit the destination; nothing was written. */
    TOO_LARGE
  }

  private final ByteBuffer destination;
  private final int maxBytes;
  private final int start;
  private CompletableFuture<Download> future;
  private ByteBuffer target;
  private CRC32C crc;
  private GetObjectResponse response;
  /** The length the answer announced; -1 if it announced none. */
  private long expected;
  private Outcome outcome;
  private boolean abandoned;
  /** One range of an object ({@link #range}): checked for its length, its CRC32C left to the caller. */
  private boolean range;

  /**
   * @param destination where the bytes go, from its position; null: a direct buffer of the
   *     object's length
   * @param maxBytes the largest object taken when there is no destination
   */
  public Download(ByteBuffer destination, int maxBytes) {
    this.destination = destination;
    this.maxBytes = maxBytes;
    this.start = destination == null ? 0 : destination.position();
  }

  /**
   * A download of one range of an object into {@code slice} (from its position to its limit),
   * for {@link RangedDownload}: intact when the answer fills the slice exactly. Its CRC32C is
   * that of the range, which the caller combines with the others' to check the object.
   */
  static Download range(ByteBuffer slice) {
    Download d = new Download(slice, slice.remaining());
    d.range = true;
    return d;
  }

  @Override
  public synchronized CompletableFuture<Download> prepare() {
    // called again for each attempt of a retried request: start over
    future = new CompletableFuture<>();
    target = null;
    crc = new CRC32C();
    response = null;
    outcome = null;
    if (destination != null && !abandoned) {
      destination.position(start);
    }
    return future;
  }

  @Override
  public synchronized void onResponse(GetObjectResponse response) {
    this.response = response;
    long length = response.contentLength() == null ? -1 : response.contentLength();
    expected = length;
    if (destination != null) {
      if (length > destination.limit() - start) {
        outcome = Outcome.TOO_LARGE;
      } else {
        target = destination;
      }
    } else if (length < 0 || length > maxBytes) {
      outcome = Outcome.TOO_LARGE;
    } else {
      target = ByteBuffer.allocateDirect((int) length);
    }
  }

  @Override
  public void onStream(SdkPublisher<ByteBuffer> publisher) {
    publisher.subscribe(new Subscriber<>() {
      private Subscription subscription;

      @Override
      public void onSubscribe(Subscription s) {
        subscription = s;
        synchronized (Download.this) {
          if (outcome == Outcome.TOO_LARGE || abandoned) {
            s.cancel();
            future.complete(Download.this);
            return;
          }
        }
        s.request(Long.MAX_VALUE);
      }

      @Override
      public void onNext(ByteBuffer part) {
        if (!copy(part)) {
          subscription.cancel();
        }
      }

      @Override
      public void onError(Throwable t) {
        future.completeExceptionally(t);
      }

      @Override
      public void onComplete() {
        finish();
      }
    });
  }

  /** Copies a part in and checksums it; false if the download is over (abandoned or too long). */
  private synchronized boolean copy(ByteBuffer part) {
    if (abandoned || outcome != null) {
      return false;
    }
    if (part.remaining() > target.remaining()) {
      outcome = Outcome.TOO_LARGE; // longer than its content-length said
      future.complete(this);
      return false;
    }
    int at = target.position();
    target.put(part);
    crc.update(target.duplicate().flip().position(at));
    return true;
  }

  private synchronized void finish() {
    if (outcome == null && !abandoned) {
      long received = received();
      boolean whole = range ? received == destination.limit() - start : matches();
      outcome = (expected < 0 || received == expected) && whole ? Outcome.INTACT : Outcome.DAMAGED;
    }
    future.complete(this);
  }

  /** The user metadata the answer carried; empty before it came. */
  public synchronized Map<String, String> metadata() {
    return response == null || response.metadata() == null ? Map.of() : response.metadata();
  }

  private boolean matches() {
    Integer stored = storedChecksum(response);
    return stored != null && stored == (int) crc.getValue();
  }

  /**
   * The CRC32C an object was stored with: the one the tier wrote in its metadata when it uploaded
   * it, else the store's own {@code x-amz-checksum-crc32c}; null if it has neither, or if the two
   * disagree. Metadata keys are matched without regard to case (rclone capitalises them).
   */
  public static Integer storedChecksum(GetObjectResponse response) {
    Integer ours;
    try {
      ours = metadataChecksum(response);
    } catch (NumberFormatException bad) {
      return null;
    }
    Integer stores = null;
    if (response.checksumCRC32C() != null) {
      try {
        stores = Crc32c.fromBase64(response.checksumCRC32C());
      } catch (IllegalArgumentException bad) {
        return null;
      }
    }
    if (ours != null && stores != null && !ours.equals(stores)) {
      return null;
    }
    return ours != null ? ours : stores;
  }

  /**
   * The CRC32C the tier wrote in an object's metadata when it uploaded it; null if there is none.
   * Metadata keys are matched without regard to case (rclone capitalises them).
   *
   * @throws NumberFormatException if the value is not 8 hex digits' worth
   */
  static Integer metadataChecksum(GetObjectResponse response) {
    Map<String, String> meta = response.metadata();
    if (meta != null) {
      for (Map.Entry<String, String> e : meta.entrySet()) {
        if (e.getKey().equalsIgnoreCase(CRC_METADATA)) {
          return Integer.parseUnsignedInt(e.getValue().strip(), 16);
        }
      }
    }
    return null;
  }

  @Override
  public void exceptionOccurred(Throwable error) {
    CompletableFuture<Download> f;
    synchronized (this) {
      f = future;
    }
    if (f != null) {
      f.completeExceptionally(error);
    }
  }

  /**
   * Stops the download: from the return of this call on, nothing more is written into the
   * destination, which is left as it was before the download (its position restored).
   */
  public synchronized void abandon() {
    abandoned = true;
    if (destination != null) {
      destination.position(start);
    }
  }

  /** What the download found; null until it completed. */
  public synchronized Outcome outcome() {
    return outcome;
  }

  /** The answer's headers. */
  public synchronized GetObjectResponse response() {
    return response;
  }

  private long received() {
    return target.position() - (target == destination ? start : 0);
  }

  /** The bytes received. */
  public synchronized int length() {
    return (int) received();
  }

  /** The checksum the bytes were checked against. */
  public synchronized int crc32c() {
    return (int) crc.getValue();
  }

  /**
   * The bytes received: the direct buffer made for them (position 0, limit its length) when the
   * download had no destination; the destination otherwise, its position past the bytes.
   */
  public synchronized ByteBuffer bytes() {
    return target == destination ? destination : target.flip();
  }
}
