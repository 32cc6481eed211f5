package dev.kvcache.server.s3;

import io.micronaut.context.annotation.ConfigurationProperties;
import java.util.List;

/**
 * The S3 API, from {@code kvcache.s3.*}: the port it listens on beside the server's own ({@code
 * port}; unset, the API is off), and the host names under which a request's first label names its
 * bucket ({@code base-domains}: with {@code s3.kv.example}, {@code engine.s3.kv.example} is the
 * bucket {@code engine}, virtual-host addressing); other requests name it in their path.
 */
@ConfigurationProperties("kvcache.s3")
public class S3Settings {

  private Integer port;
  private List<String> baseDomains = List.of();

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
}
