package dev.kvcache.server.s3;

import io.micronaut.context.annotation.ConfigurationProperties;
import dev.kvcache.server.cache.SizeSetting;
import java.time.Duration;
import java.util.List;

/**
 * The S3 API, from {@code kvcache.s3.*}: the port it listens on beside the server's own ({@code
 * port}; unset, the API is off), and the host names under which a request's first label names its
 * bucket ({@code base-domains}: with {@code s3.kv.example}, {@code engine.s3.kv.example} is the
 * bucket {@code engine}, virtual-host addressing); other requests name it in their path. The
 * parts of multipart uploads under way wait in memory outside the cache, at most {@code
 * multipart-staging-bytes} of it, each upload for at most {@code multipart-idle-timeout} after
 * its last request.
 */
@ConfigurationProperties("kvcache.s3")
public class S3Settings {

  private Integer port;
  private List<String> baseDomains = List.of();
  private String multipartStagingBytes = "1GiB";
  private Duration multipartIdleTimeout = Duration.ofHours(1);

  /** The S3 API's port; null if the API is off. */
  public Integer getPort() {
    return port;
  }

  public void setPort(Integer port) {
    if (port != null && (port < 1 || port > 65535)) {
      throw new IllegalArgumentException("kvcache.s3.port must be from 1 to 65535, not " + port);
    }
    this.port = port;
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
