package dev.kvcache.server.s3;

import io.micronaut.context.annotation.ConfigurationProperties;
import dev.kvcache.server.cache.SizeSetting;
import java.time.Duration;
import java.util.List;

/**
 * The S3 API, from {@code kvcache.s3.*}: on unless {@code enabled} is false, on its own {@code
 * port} beside the server's ({@value #DEFAULT_PORT} by default; -1 for any free port, which the
 * welcome line names), with the host names under which a request's first label names its bucket
 * ({@code base-domains}: with {@code s3.kv.example}, {@code engine.s3.kv.example} is the bucket
 * {@code engine}, virtual-host addressing); other requests name it in their path. The parts of
 * multipart uploads under way wait in memory outside the cache, at most {@code
 * multipart-staging-bytes} of it, each upload for at most {@code multipart-idle-timeout} after its
 * last request.
 */
@ConfigurationProperties("kvcache.s3")
public class S3Settings {

  /** The API's port unless another is set. */
  public static final int DEFAULT_PORT = 7071;

  private boolean enabled = true;
  private int port = DEFAULT_PORT;
  private volatile int boundPort;
  private List<String> baseDomains = List.of();
  private String multipartStagingBytes = "1GiB";
  private Duration multipartIdleTimeout = Duration.ofHours(1);

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  /** The API's port as set: -1 for any free one. */
  public int getPort() {
    return port;
  }

  public void setPort(int port) {
    if (port != -1 && (port < 1 || port > 65535)) {
      throw new IllegalArgumentException("kvcache.s3.port must be from 1 to 65535, or -1 for "
          + "any free port, not " + port);
    }
    this.port = port;
  }

  /**
   * The port the API listens on: the one set, or for -1 the one the listener was given when the
   * server started (0 until then); 0 if the API is off.
   */
  public int port() {
    return !enabled ? 0 : port > 0 ? port : boundPort;
  }

  /** The port the listener of a port set to -1 was given. */
  void bound(int port) {
    this.boundPort = port;
  }

  public List<String> getBaseDomains() {
    return baseDomains;
  }

  public void setBaseDomains(List<String> baseDomains) {
    this.baseDomains = List.copyOf(baseDomains);
  }

  public String getMultipartStagingBytes() {
    return multipartStagingBytes;
  }

  public void setMultipartStagingBytes(String multipartStagingBytes) {
    this.multipartStagingBytes = multipartStagingBytes;
  }

  /** The memory the parts of multipart uploads under way may take, together, in bytes. */
  long multipartStagingBytes() {
    return SizeSetting.bytes("kvcache.s3.multipart-staging-bytes", multipartStagingBytes, 1);
  }

  /** How long a multipart upload may go untouched before it is dropped with its parts. */
  public Duration getMultipartIdleTimeout() {
    return multipartIdleTimeout;
  }

  public void setMultipartIdleTimeout(Duration multipartIdleTimeout) {
    if (multipartIdleTimeout.isNegative() || multipartIdleTimeout.isZero()) {
      throw new IllegalArgumentException("kvcache.s3.multipart-idle-timeout must be positive, not "
          + multipartIdleTimeout);
    }
    this.multipartIdleTimeout = multipartIdleTimeout;
  }
}
