package dev.kvcache.s3api.auth;

import dev.kvcache.s3api.PercentEncoding;
import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;

/**
 * Checks that a request is signed with AWS Signature Version 4 by a key it knows: in the {@code
 * Authorization} header, or in the query of a presigned URL. It recomputes the signature from the
 * request as received and compares it with the one sent; the request's time must be within {@link
 * #MAX_SKEW} of the server's, and a presigned URL within its {@code X-Amz-Expires}.
 *
 * <p>The canonical request of S3 has its path not normalized and encoded once. Clients sign the
 * path as they send it, which is its canonical form when they encode it as SigV4 does; one that
 * encodes fewer characters (a {@code +} or an {@code @} left as it is) has signed the path as
 * sent. So the path as sent is tried first, then its canonical encoding.
 *
 * <p>The region in the credential's scope is the client's to choose: the server answers to any.
 */
public final class SigV4Verifier {

  /** Headers a request signed in its header must sign, as S3 requires of them. */
  private static final Set<String> MUST_BE_SIGNED = Set.of("x-amz-content-sha256", "x-amz-acl",
      "x-amz-tagging", "x-amz-storage-class", "x-amz-website-redirect-location",
      "x-amz-metadata-directive", "x-amz-mfa", "x-amz-expected-bucket-owner");

  /** The prefixes of headers a request signed in its header must sign. */
  private static final List<String> MUST_BE_SIGNED_PREFIXES = List.of("x-amz-meta-",
      "x-amz-checksum-", "x-amz-object-lock-", "x-amz-grant-", "x-amz-server-side-encryption",
      "x-amz-copy-source");

  /** How far a request's time may be from the server's, as S3 allows. */
  public static final Duration MAX_SKEW = Duration.ofMinutes(15);
  /** The longest a presigned URL may be valid, as S3 allows. */
  public static final Duration MAX_PRESIGNED = Duration.ofDays(7);

  private static final String ALGORITHM = "AWS4-HMAC-SHA256";
  private static final DateTimeFormatter AMZ_DATE =
      DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'", Locale.ROOT);

  private final Function<String, String> secrets;
  private final Clock clock;

  /**
   * @param secrets the secret of an access key; null for a key the server does not know
   * @param clock the server's time
   */
  public SigV4Verifier(Function<String, String> secrets, Clock clock) {
    this.secrets = Objects.requireNonNull(secrets, "secrets");
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  /**
   * The request's signer, once its signature is checked.
   *
   * @throws S3Exception {@code AccessDenied} if it is not signed or its presigned URL has
   *     expired, {@code InvalidAccessKeyId}, {@code SignatureDoesNotMatch}, {@code
   *     RequestTimeTooSkewed}, or a malformed-authorization error naming what is wrong
   */
  public Verified verify(RequestParts request) throws S3Exception {
    List<String> authorization = request.header("authorization");
    if (!authorization.isEmpty()) {
      return verifyHeader(request, authorization.get(0));
    }
    Map<String, String> query = PercentEncoding.queryParameters(request.rawQuery());
    if (query.containsKey("X-Amz-Signature") || query.containsKey("X-Amz-Credential")) {
      return verifyQuery(request, query);
    }
    if (query.containsKey("AWSAccessKeyId") && query.containsKey("Signature")) {
      throw new S3Exception(S3Error.ACCESS_DENIED, "the URL is presigned with Signature Version "
          + "2, which is not supported: presign it with AWS Signature Version 4 (boto3: "
          + "Config(signature_version='s3v4'))");
    }
    throw new S3Exception(S3Error.ACCESS_DENIED,
        "the request is not signed: sign it with AWS Signature Version 4 and an access key");
  }

  private Verified verifyHeader(RequestParts r, String header) throws S3Exception {
    S3Error malformed = S3Error.AUTHORIZATION_HEADER_MALFORMED;
    if (!header.startsWith(ALGORITHM + " ")) {
      if (header.startsWith("AWS ")) {
        throw new S3Exception(S3Error.INVALID_REQUEST, "Signature Version 2 is not supported: "
            + "sign with AWS Signature Version 4 (" + ALGORITHM + ")");
      }
      throw new S3Exception(S3Error.INVALID_ARGUMENT, "the Authorization header must start with "
          + ALGORITHM + ", not " + header.split(" ", 2)[0]);
    }
    Map<String, String> fields = new HashMap<>();
    for (String part : header.substring(ALGORITHM.length() + 1).split(",")) {
      int eq = part.indexOf('=');
      if (eq > 0) {
        fields.put(part.substring(0, eq).strip(), part.substring(eq + 1).strip());
      }
    }
    String credential = required(fields, "Credential", malformed);
    String signedHeaders = required(fields, "SignedHeaders", malformed);
    String signature = required(fields, "Signature", malformed);
    String amzDate = r.first("x-amz-date");
    if (amzDate == null || !isDate(amzDate)) {
      throw new S3Exception(S3Error.ACCESS_DENIED, "a request signed in its Authorization header "
          + "needs an x-amz-date header of the form yyyyMMddTHHmmssZ"
          + (amzDate == null ? "" : ", not \"" + amzDate + "\""));
    }
    String contentSha256 = r.first("x-amz-content-sha256");
    if (contentSha256 == null) {
      throw new S3Exception(S3Error.INVALID_REQUEST,
          "missing required header for this request: x-amz-content-sha256");
    }
    Payload payload = Payload.of(contentSha256);
    Scope scope = Scope.parse(credential, amzDate, malformed);
    Instant at = parseDate(amzDate, malformed);
    Duration skew = Duration.between(at, clock.instant()).abs();
    if (skew.compareTo(MAX_SKEW) > 0) {
      throw new S3Exception(S3Error.REQUEST_TIME_TOO_SKEWED, "the request's time (" + amzDate
          + ") is " + skew.toSeconds() + " s from the server's; at most " + MAX_SKEW.toMinutes()
          + " minutes are allowed");
    }
    byte[] key = signingKey(scope);
    check(key, amzDate, scope, r, Canonical.query(r.rawQuery(), null), signedHeaders,
        contentSha256, signature, malformed);
    requireSigned(r, signedHeaders);
    return verified(scope, key, amzDate, signature, payload, contentSha256);
  }

  private Verified verifyQuery(RequestParts r, Map<String, String> q) throws S3Exception {
    S3Error malformed = S3Error.AUTHORIZATION_QUERY_PARAMETERS_ERROR;
    String algorithm = required(q, "X-Amz-Algorithm", malformed);
    if (!algorithm.equals(ALGORITHM)) {
      throw new S3Exception(malformed, "X-Amz-Algorithm must be " + ALGORITHM);
    }
    String amzDate = required(q, "X-Amz-Date", malformed);
    Scope scope = Scope.parse(required(q, "X-Amz-Credential", malformed), amzDate, malformed);
    String signedHeaders = required(q, "X-Amz-SignedHeaders", malformed);
    String signature = required(q, "X-Amz-Signature", malformed);
    long expires;
    try {
      expires = Long.parseLong(required(q, "X-Amz-Expires", malformed));
    } catch (NumberFormatException e) {
      throw new S3Exception(malformed, "X-Amz-Expires must be a number of seconds");
    }
    if (expires < 1 || expires > MAX_PRESIGNED.toSeconds()) {
      throw new S3Exception(malformed, "X-Amz-Expires must be from 1 to "
          + MAX_PRESIGNED.toSeconds() + " seconds");
    }
    Instant at = parseDate(amzDate, malformed);
    Instant now = clock.instant();
    if (now.isAfter(at.plusSeconds(expires))) {
      throw new S3Exception(S3Error.ACCESS_DENIED, "the presigned URL expired at "
          + at.plusSeconds(expires));
    }
    if (at.isAfter(now.plus(MAX_SKEW))) {
      throw new S3Exception(S3Error.ACCESS_DENIED, "the presigned URL is not valid before " + at);
    }
    byte[] key = signingKey(scope);
    String contentSha256 = r.first("x-amz-content-sha256");
    String hash = contentSha256 != null ? contentSha256 : "UNSIGNED-PAYLOAD";
    Payload payload = Payload.of(hash);
    check(key, amzDate, scope, r, Canonical.query(r.rawQuery(), "X-Amz-Signature"),
        signedHeaders, hash, signature, malformed);
    return verified(scope, key, amzDate, signature, payload, hash);
  }

  /** A checked request: its signed hash if its payload is signed, its chunks' signer if they are. */
  private static Verified verified(Scope scope, byte[] key, String amzDate, String signature,
      Payload payload, String contentSha256) {
    return new Verified(scope.accessKey, payload,
        payload == Payload.SIGNED ? contentSha256.toLowerCase(Locale.ROOT) : null,
        payload.chunksSigned() ? new ChunkSigner(key, amzDate, scope.text(), signature) : null);
  }

  /**
   * Checks {@code signature} against the request's canonical form, its path as sent and, if that
   * differs, encoded as SigV4 does.
   */
  private static void check(byte[] key, String amzDate, Scope scope, RequestParts r,
      String canonicalQuery, String signedHeaders, String payloadHash, String signature,
      S3Error malformed) throws S3Exception {
    String rest = "\n" + canonicalQuery + "\n" + canonicalHeaders(r, signedHeaders, malformed)
        + "\n" + signedHeaders + "\n" + payloadHash;
    String sent = r.rawPath().isEmpty() ? "/" : r.rawPath();
    String encoded = Canonical.path(r.rawPath());
    if (!signs(key, amzDate, scope, r.method() + "\n" + sent + rest, signature)
        && (encoded.equals(sent)
            || !signs(key, amzDate, scope, r.method() + "\n" + encoded + rest, signature))) {
      throw new S3Exception(S3Error.SIGNATURE_DOES_NOT_MATCH, "the request signature we "
          + "calculated does not match the signature you provided: check your secret key and "
          + "signing method");
    }
  }

  private static String canonicalHeaders(RequestParts r, String signedHeaders, S3Error malformed)
      throws S3Exception {
    List<String> names = Arrays.asList(signedHeaders.split(";"));
    if (!names.contains("host")) {
      throw new S3Exception(malformed, "the signed headers must include host");
    }
    StringBuilder b = new StringBuilder(256);
    for (String name : names) {
      if (name.isEmpty() || !name.equals(name.toLowerCase(Locale.ROOT))) {
        throw new S3Exception(malformed, "signed header names are lower case: " + signedHeaders);
      }
      b.append(name).append(':').append(Canonical.headerValue(r.header(name))).append('\n');
    }
    return b.toString();
  }

  private static boolean signs(byte[] key, String amzDate, Scope scope, String canonicalRequest,
      String signature) {
    String stringToSign = ALGORITHM + "\n" + amzDate + "\n" + scope.text() + "\n"
        + Hashes.hex(Hashes.sha256(canonicalRequest.getBytes(StandardCharsets.UTF_8)));
    return Hashes.sameSignature(Hashes.hex(Hashes.hmac(key, stringToSign)), signature);
  }

  private byte[] signingKey(Scope scope) throws S3Exception {
    String secret = secrets.apply(scope.accessKey);
    if (secret == null) {
      throw new S3Exception(S3Error.INVALID_ACCESS_KEY_ID,
          "the access key " + scope.accessKey + " is not one this server knows");
    }
    byte[] k = Hashes.hmac(("AWS4" + secret).getBytes(StandardCharsets.UTF_8), scope.date);
    k = Hashes.hmac(k, scope.region);
    k = Hashes.hmac(k, scope.service);
    return Hashes.hmac(k, "aws4_request");
  }

  /**
   * Refuses a request signed in its header that carries, unsigned, a header that changes what it
   * stores or how its body is checked: what the signature covers is then not what the server
   * would do. Headers a client's SDK leaves unsigned by design (its user agent, trace ids) are
   * not among them.
   */
  private static void requireSigned(RequestParts r, String signedHeaders) throws S3Exception {
    Set<String> signed = new HashSet<>(Arrays.asList(signedHeaders.split(";")));
    List<String> unsigned = r.headerNames().stream()
        .filter(n -> !signed.contains(n) && mustBeSigned(n)).distinct().sorted().toList();
    if (!unsigned.isEmpty()) {
      throw new S3Exception(S3Error.ACCESS_DENIED, "There were headers present in the request "
          + "which were not signed: " + String.join(", ", unsigned));
    }
  }

  private static boolean mustBeSigned(String name) {
    for (String prefix : MUST_BE_SIGNED_PREFIXES) {
      if (name.startsWith(prefix)) {
        return true;
      }
    }
    return MUST_BE_SIGNED.contains(name);
  }

  private static boolean isDate(String amzDate) {
    try {
      LocalDateTime.parse(amzDate, AMZ_DATE);
      return true;
    } catch (DateTimeParseException e) {
      return false;
    }
  }

  private static Instant parseDate(String amzDate, S3Error malformed) throws S3Exception {
    try {
      return LocalDateTime.parse(amzDate, AMZ_DATE).toInstant(ZoneOffset.UTC);
    } catch (DateTimeParseException e) {
      throw new S3Exception(malformed, "the request's date must be yyyyMMddTHHmmssZ, not "
          + amzDate);
    }
  }

  private static String required(Map<String, String> fields, String name, S3Error malformed)
      throws S3Exception {
    String v = fields.get(name);
    if (v == null || v.isEmpty()) {
      throw new S3Exception(malformed, "the signature has no " + name);
    }
    return v;
  }

  /** A credential's scope: access key, date, region, service. */
  private record Scope(String accessKey, String date, String region, String service) {

    static Scope parse(String credential, String amzDate, S3Error malformed) throws S3Exception {
      String[] p = credential.split("/");
      if (p.length != 5 || !p[4].equals("aws4_request") || p[0].isEmpty()) {
        throw new S3Exception(malformed, "the credential must be "
            + "<access key>/<yyyyMMdd>/<region>/s3/aws4_request, not " + credential);
      }
      if (!amzDate.startsWith(p[1])) {
        throw new S3Exception(malformed, "the credential's date " + p[1]
            + " is not the request's (" + amzDate + ")");
      }
      if (!p[3].equals("s3")) {
        throw new S3Exception(malformed, "the credential's service must be s3, not " + p[3]);
      }
      return new Scope(p[0], p[1], p[2], p[3]);
    }

    String text() {
      return date + "/" + region + "/" + service + "/aws4_request";
    }
  }
}
