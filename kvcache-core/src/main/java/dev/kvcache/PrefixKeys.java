package dev.kvcache;

import dev.kvcache.internal.keys.KeyHashing;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Computes the chained prefix keys of a prompt: block {@code i}'s key hashes block {@code i-1}'s
 * key together with block {@code i}'s token ids, so equal prefixes give equal keys and each key
 * identifies its whole prefix.
 *
 * <p>Only full blocks get keys: a prompt of {@code n} tokens yields {@code n / blockSizeTokens}
 * keys, and the trailing partial block is not cacheable. The scheme (SHA-256, salted by the {@link
 * Namespace}, truncated to 128 bits) is specified bit for bit in {@code docs/keys.md}, with test
 * vectors, so engines in other languages can compute the same keys.
 *
 * <pre>{@code
 * PrefixKeys prefix = PrefixKeys.of(Namespace.of("llama-3.1-8b", "bf16", "tp0of1"), 16);
 * List<BlockKey> keys = prefix.keysFor(tokenIds);
 * }</pre>
 *
 * <p>Instances are immutable and thread-safe.
 */
public final class PrefixKeys {

  private final Namespace namespace;
  private final int blockSizeTokens;

  private PrefixKeys(Namespace namespace, int blockSizeTokens) {
    this.namespace = Objects.requireNonNull(namespace, "namespace");
    if (blockSizeTokens < 1) {
      throw new IllegalArgumentException(
          "block size must be at least 1 token, got " + blockSizeTokens);
    }
    this.blockSizeTokens = blockSizeTokens;
  }

  /**
   * A key calculator for one namespace and block size.
   *
   * @param blockSizeTokens tokens per block, at least 1
   */
  public static PrefixKeys of(Namespace namespace, int blockSizeTokens) {
    return new PrefixKeys(namespace, blockSizeTokens);
  }

  public Namespace namespace() {
    return namespace;
  }

  public int blockSizeTokens() {
    return blockSizeTokens;
  }

  /** The keys of every full block of {@code tokenIds}, first block first. */
  public List<BlockKey> keysFor(int[] tokenIds) {
    Objects.requireNonNull(tokenIds, "tokenIds");
    int blocks = tokenIds.length / blockSizeTokens;
    List<BlockKey> keys = new ArrayList<>(blocks);
    MessageDigest md = KeyHashing.sha256();
    byte[] nsDigest = namespace.digestNoCopy();
    byte[] parent = Arrays.copyOf(nsDigest, KeyHashing.KEY_BYTES);
    for (int b = 0; b < blocks; b++) {
      parent = KeyHashing.blockKey(md, nsDigest, parent, tokenIds, b * blockSizeTokens, blockSizeTokens);
      keys.add(BlockKey.of(namespace, parent));
    }
    return keys;
  }

  /**
   * The key of the block that follows {@code parent}, for engines that extend a prompt block by
   * block.
   *
   * @param parent the previous block's key, or {@code null} for the first block of a prompt
   * @param tokenIds array holding the block's tokens
   * @param from index of the block's first token in {@code tokenIds}
   * @throws IndexOutOfBoundsException if the block does not fit in {@code tokenIds}
   */
  public BlockKey next(BlockKey parent, int[] tokenIds, int from) {
    Objects.requireNonNull(tokenIds, "tokenIds");
    Objects.checkFromIndexSize(from, blockSizeTokens, tokenIds.length);
    byte[] nsDigest = namespace.digestNoCopy();
    byte[] parentBytes =
        parent == null ? Arrays.copyOf(nsDigest, KeyHashing.KEY_BYTES) : parent.toBytes();
    return BlockKey.of(namespace,
        KeyHashing.blockKey(KeyHashing.sha256(), nsDigest, parentBytes, tokenIds, from, blockSizeTokens));
  }
}
