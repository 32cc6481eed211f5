package dev.kvcache.s3api.body;

import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import dev.kvcache.s3api.auth.ChunkSigner;
import dev.kvcache.s3api.auth.Hashes;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Decodes a body sent {@code Content-Encoding: aws-chunked}, as it arrives in pieces of any size:
 * chunks of {@code <hex length>[;chunk-signature=<sig>]\r\n<bytes>\r\n}, a last chunk of length 0,
 * then trailer lines ({@code x-amz-checksum-crc32:<base64>}, {@code x-amz-trailer-signature:<sig>})
 * and an empty line. The decoded bytes are told to a {@link Sink} as ranges of the pieces fed,
 * never copied.
 *
 * <p>With a {@link ChunkSigner}, each chunk's signature is checked once its bytes have come (and
 * the trailer's, if the body is signed with a trailer), before the next chunk's bytes are given
 * out. With a trailing checksum named ({@code x-amz-trailer}), it is computed over the decoded
 * bytes and checked against the trailer's. With a decoded length ({@code
 * x-amz-decoded-content-length}), the body must have exactly that many bytes. What fails is a
 * {@link S3Exception}: {@code SignatureDoesNotMatch}, {@code BadDigest} or {@code IncompleteBody}.
 */
public final class AwsChunkedDecoder {

  /** Where the decoded bytes go. */
  public interface Sink {
    /**
     * The {@code length} bytes at {@code offset} of the piece being fed (from its position) are
     * decoded bytes, the next in order.
     */
    void accept(int offset, int length) throws S3Exception;
  }

  /** The longest chunk header or trailer line taken. */
  static final int MAX_LINE = 8192;

  private enum State { HEADER, DATA, DATA_END, TRAILER, DONE }

  private final ChunkSigner signer;
  private final boolean trailerSigned;
  private final ChecksumAlgorithm trailerChecksum;
  private final ChecksumAlgorithm.Running checksum;
  private final long decodedLength;
  private final StringBuilder line = new StringBuilder();
  private final Map<String, String> trailers = new LinkedHashMap<>();
  private final MessageDigest chunkSha256;
  private State state = State.HEADER;
  private long chunkRemaining;
  private String chunkSignature;
  private String previousSignature;
  private String trailerSignature;
  private long decoded;

  /**
   * @param signer the signatures the chunks must have; null if they are not signed
   * @param trailerSigned whether the trailer must carry {@code x-amz-trailer-signature} (with a
   *     signer: {@code STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER})
   * @param trailerChecksum the checksum the trailer must give ({@code x-amz-trailer}); null if none
   * @param decodedLength the decoded bytes there must be; -1 if not said
   */
  public AwsChunkedDecoder(ChunkSigner signer, boolean trailerSigned,
      ChecksumAlgorithm trailerChecksum, long decodedLength) {
    this.signer = signer;
    this.trailerSigned = trailerSigned && signer != null;
    this.trailerChecksum = trailerChecksum;
    this.checksum = trailerChecksum == null ? null : trailerChecksum.start();
    this.decodedLength = decodedLength;
    this.previousSignature = signer == null ? null : signer.seed();
    this.chunkSha256 = signer == null ? null : Hashes.newSha256();
  }

  /**
   * Takes {@code piece}'s remaining bytes, the next of the body, telling {@code sink} which of them
   * are decoded bytes; leaves its position alone.
   */
  public void feed(ByteBuffer piece, Sink sink) throws S3Exception {
    ByteBuffer b = piece.duplicate();
    int start = b.position();
    while (b.hasRemaining()) {
      switch (state) {
        case HEADER -> {
          if (readLine(b)) {
            chunkHeader(takeLine());
          }
        }
        case DATA -> data(b, start, sink);
        case DATA_END -> {
          if (readLine(b)) {
            if (!takeLine().isEmpty()) {
              throw incomplete("a chunk's bytes run past its length");
            }
            state = State.HEADER;
          }
        }
        case TRAILER -> {
          if (readLine(b)) {
            trailerLine(takeLine());
          }
        }
        case DONE -> throw incomplete("bytes follow the body's last chunk and trailer");
        default -> throw new IllegalStateException(state.toString());
      }
    }
  }

  /**
   * The body has ended: it must have had its last chunk and trailer.
   *
   * @return the trailer's lines other than its signature, by lower-case name
   */
  public Map<String, String> finish() throws S3Exception {
    if (state != State.DONE) {
      throw incomplete("the body ended before its last chunk and trailer (" + decoded
          + " bytes decoded)");
    }
    return Collections.unmodifiableMap(trailers);
  }

  /** The decoded bytes so far. */
  public long decoded() {
    return decoded;
  }

  private void data(ByteBuffer b, int start, Sink sink) throws S3Exception {
    int n = (int) Math.min(chunkRemaining, b.remaining());
    ByteBuffer bytes = b.slice(b.position(), n);
    if (chunkSha256 != null) {
      chunkSha256.update(bytes.duplicate());
    }
    if (checksum != null) {
      checksum.update(bytes);
    }
    decoded += n;
    if (decodedLength >= 0 && decoded > decodedLength) {
      throw incomplete("the body decodes to more than its x-amz-decoded-content-length, "
          + decodedLength + " bytes");
    }
    int offset = b.position() - start;
    b.position(b.position() + n);
    chunkRemaining -= n;
    if (chunkRemaining == 0) {
      checkChunkSignature(); // before the last bytes of a chunk go out
    }
    sink.accept(offset, n);
    if (chunkRemaining == 0) {
      state = State.DATA_END;
    }
  }

  private void chunkHeader(String header) throws S3Exception {
    int semi = header.indexOf(';');
    String hex = (semi < 0 ? header : header.substring(0, semi)).strip();
    long length;
    try {
      length = Long.parseLong(hex, 16);
    } catch (NumberFormatException e) {
      throw incomplete("a chunk header must start with its length in hex, not '" + shorten(header)
          + "'");
    }
    if (length < 0 || length > Integer.MAX_VALUE) {
      throw incomplete("a chunk of " + hex + " bytes (hex) is out of range");
    }
    chunkSignature = null;
    if (semi >= 0) {
      for (String ext : header.substring(semi + 1).split(";")) {
        int eq = ext.indexOf('=');
        if (eq > 0 && ext.substring(0, eq).strip().equals("chunk-signature")) {
          chunkSignature = ext.substring(eq + 1).strip();
        }
      }
    }
    if (signer != null && chunkSignature == null) {
      throw new S3Exception(S3Error.SIGNATURE_DOES_NOT_MATCH,
          "a chunk of a signed body has no chunk-signature");
    }
    if (length == 0) {
      checkChunkSignature();
      state = State.TRAILER;
    } else {
      chunkRemaining = length;
      state = State.DATA;
    }
  }

  private void checkChunkSignature() throws S3Exception {
    if (signer == null) {
      return;
    }
    String expected = signer.chunk(previousSignature, chunkSha256.digest());
    if (!ChunkSigner.matches(expected, chunkSignature)) {
      throw new S3Exception(S3Error.SIGNATURE_DOES_NOT_MATCH, "the signature of the chunk "
          + "ending at byte " + decoded + " does not match its bytes");
    }
    previousSignature = chunkSignature;
  }

  private void trailerLine(String text) throws S3Exception {
    if (!text.isEmpty()) {
      int colon = text.indexOf(':');
      if (colon <= 0) {
        throw incomplete("a trailer line must be name:value, not '" + shorten(text) + "'");
      }
      String name = text.substring(0, colon).strip().toLowerCase(Locale.ROOT);
      String value = text.substring(colon + 1).strip();
      if (name.equals("x-amz-trailer-signature")) {
        trailerSignature = value;
      } else {
        trailers.put(name, value);
      }
      return;
    }
    if (trailerSigned) {
      if (trailerSignature == null) {
        throw new S3Exception(S3Error.SIGNATURE_DOES_NOT_MATCH,
            "the trailer of a body signed with a trailer has no x-amz-trailer-signature");
      }
      StringBuilder canonical = new StringBuilder();
      trailers.forEach((k, v) -> canonical.append(k).append(':').append(v).append('\n'));
      String expected = signer.trailer(previousSignature,
          Hashes.newSha256().digest(canonical.toString().getBytes(StandardCharsets.UTF_8)));
      if (!ChunkSigner.matches(expected, trailerSignature)) {
        throw new S3Exception(S3Error.SIGNATURE_DOES_NOT_MATCH,
            "the trailer's signature does not match its lines");
      }
    }
    if (decodedLength >= 0 && decoded != decodedLength) {
      throw incomplete("the body decodes to " + decoded + " bytes, not its "
          + "x-amz-decoded-content-length of " + decodedLength);
    }
    if (trailerChecksum != null) {
      String sent = trailers.get(trailerChecksum.header());
      if (sent == null) {
        throw incomplete("the trailer has no " + trailerChecksum.header()
            + ", which x-amz-trailer names");
      }
      String computed = checksum.base64();
      if (!computed.equals(sent)) {
        throw new S3Exception(S3Error.BAD_DIGEST, "the " + trailerChecksum.header()
            + " of the body is " + computed + ", not the " + shorten(sent) + " sent");
      }
    }
    state = State.DONE;
  }

  /** Reads up to the end of a line; true once it has ended ({@link #takeLine} gives it). */
  private boolean readLine(ByteBuffer b) throws S3Exception {
    while (b.hasRemaining()) {
      byte c = b.get();
      if (c == '\n') {
        return true;
      }
      if (line.length() >= MAX_LINE) {
        throw incomplete("a chunk header or trailer line is longer than " + MAX_LINE + " bytes");
      }
      line.append((char) (c & 0xff));
    }
    return false;
  }

  private String takeLine() {
    int end = line.length();
    if (end > 0 && line.charAt(end - 1) == '\r') {
      end--;
    }
    String s = line.substring(0, end);
    line.setLength(0);
    return s;
  }

  private static String shorten(String s) {
    return s.length() <= 80 ? s : s.substring(0, 80) + "...";
  }

  private static S3Exception incomplete(String message) {
    return new S3Exception(S3Error.INCOMPLETE_BODY, message);
  }
}
