package dev.kvcache.server.cache;

import io.micronaut.context.annotation.ConfigurationProperties;
import java.util.List;

/**
 * The namespaces whose blocks are sealed at rest, from {@code kvcache.sealing.*}: {@code
 * namespaces}, and the master keys they are sealed under, as {@code id:base64} entries ({@code
 * dev.kvcache.seal.MasterKeys}), read from the file {@code master-keys-file} (a Kubernetes Secret
 * mounted as one) or given as {@code master-keys} (meant for the environment variable {@code
 * KVCACHE_SEALING_MASTER_KEYS}, never a configuration file).
 */
@ConfigurationProperties("kvcache.sealing")
public class SealingSettings {

  private List<String> namespaces = List.of();
  private String masterKeysFile = "";
  private String masterKeys = "";

  public List<String> getNamespaces() {
    return namespaces;
  }

  public void setNamespaces(List<String> namespaces) {
    this.namespaces = namespaces == null ? List.of()
        : namespaces.stream().map(String::trim).filter(n -> !n.isEmpty()).toList();
  }

  public String getMasterKeysFile() {
    return masterKeysFile;
  }

  public void setMasterKeysFile(String masterKeysFile) {
    this.masterKeysFile = masterKeysFile == null ? "" : masterKeysFile;
  }

  public String getMasterKeys() {
    return masterKeys;
  }

  public void setMasterKeys(String masterKeys) {
    this.masterKeys = masterKeys == null ? "" : masterKeys;
  }

  /** Names the master keys' source, never the keys. */
  @Override
  public String toString() {
    return "SealingSettings[namespaces=" + namespaces + ", masterKeysFile=" + masterKeysFile
        + (masterKeys.isEmpty() ? "" : ", masterKeys=(given)") + "]";
  }
}
