package dev.kvcache.server.cache;

import io.micronaut.context.annotation.EachProperty;
import io.micronaut.context.annotation.Parameter;

/**
 * One namespace's quotas, from {@code kvcache.quotas.<namespace>.*}: the bytes its blocks may hold
 * at most in RAM ({@code ram-bytes}), in the disk tier's files ({@code disk-bytes}) and in the
 * object tier's bucket ({@code object-bytes}, the whole fleet's). A namespace
 * at its quota evicts its own coldest blocks, never another's; the namespaces without a quota share
 * what the quotas leave.
 */
@EachProperty("kvcache.quotas")
public class QuotaSettings {

  private final String namespace;
  private String ramBytes = "";
  private String diskBytes = "";
  private String objectBytes = "";

  QuotaSettings(@Parameter String namespace) {
    this.namespace = namespace;
  }

  /** The namespace the quotas are for. */
  public String namespace() {
    return namespace;
  }

  public String getRamBytes() {
    return ramBytes;
  }

  public void setRamBytes(String ramBytes) {
    this.ramBytes = ramBytes;
  }

  public String getDiskBytes() {
    return diskBytes;
  }

  public void setDiskBytes(String diskBytes) {
    this.diskBytes = diskBytes;
  }

  public String getObjectBytes() {
    return objectBytes;
  }

  public void setObjectBytes(String objectBytes) {
    this.objectBytes = objectBytes;
  }
}
