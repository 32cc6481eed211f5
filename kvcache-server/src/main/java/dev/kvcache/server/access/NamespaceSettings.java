package dev.kvcache.server.access;

import io.micronaut.context.annotation.ConfigurationProperties;
import java.util.List;

/**
 * The namespaces the server serves, from {@code kvcache.namespaces} (default: {@code default}),
 * and the tokens a block of each holds, from {@code kvcache.tokens-per-block} ({@code name=tokens}
 * entries; a namespace without one counts no prefill tokens avoided).
 */
@ConfigurationProperties("kvcache")
public class NamespaceSettings {

  private List<String> namespaces = List.of("default");
  private List<String> tokensPerBlock = List.of();

  public List<String> getNamespaces() {
    return namespaces;
  }

  public void setNamespaces(List<String> namespaces) {
    this.namespaces = namespaces;
  }

  public List<String> getTokensPerBlock() {
    return tokensPerBlock;
  }

  public void setTokensPerBlock(List<String> tokensPerBlock) {
    this.tokensPerBlock = tokensPerBlock;
  }
}
