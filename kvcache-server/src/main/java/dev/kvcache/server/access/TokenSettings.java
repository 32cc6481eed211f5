package dev.kvcache.server.access;

import io.micronaut.context.annotation.EachProperty;
import io.micronaut.context.annotation.Parameter;
import java.util.List;

/**
 * One bearer token, from {@code kvcache.auth.tokens.<name>.*}: its secret, the namespaces it may
 * read ({@code GET}, {@code HEAD}, lookups) and write ({@code PUT}, {@code DELETE}), and whether
 * it may read the server's metrics and health details ({@code metrics}); with an {@code
 * access-key}, S3 clients sign with that key and the secret (AWS Signature Version 4) on the S3
 * port, with the same rights on the buckets of those names.
 */
@EachProperty("kvcache.auth.tokens")
public class TokenSettings {

  private final String name;
  private String secret;
  private List<String> read = List.of();
  private List<String> write = List.of();
  private boolean metrics;
  private String accessKey;

  TokenSettings(@Parameter String name) {
    this.name = name;
  }

  String name() {
    return name;
  }

  public String getSecret() {
    return secret;
  }

  public void setSecret(String secret) {
    this.secret = secret;
  }

  public List<String> getRead() {
    return read;
  }

  public void setRead(List<String> read) {
    this.read = read;
  }

  public List<String> getWrite() {
    return write;
  }

  public void setWrite(List<String> write) {
    this.write = write;
  }

  /** The access key S3 clients sign with, beside the secret; null for none. */
  public String getAccessKey() {
    return accessKey;
  }

  public void setAccessKey(String accessKey) {
    this.accessKey = accessKey;
  }

  /** Whether the token may read {@code /prometheus} and {@code /health}'s details. */
  public boolean isMetrics() {
    return metrics;
  }

  public void setMetrics(boolean metrics) {
    this.metrics = metrics;
  }
}
