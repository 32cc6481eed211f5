package dev.kvcache.server;

import io.micronaut.context.annotation.ConfigurationProperties;
import java.util.List;

/** The namespaces the server serves, from {@code kvcache.namespaces} (default: {@code default}). */
@ConfigurationProperties("kvcache")
class NamespaceSettings {

  private List<String> namespaces = List.of("default");

  public List<String> getNamespaces() {
    return namespaces;
  }

  public void setNamespaces(List<String> namespaces) {
    this.namespaces = namespaces;
  }
}
