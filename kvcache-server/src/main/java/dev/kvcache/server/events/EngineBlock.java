package dev.kvcache.server.events;

import dev.kvcache.spi.BlockTags;
import dev.kvcache.wire.Wire;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Arrays;
import java.util.Objects;
import java.util.function.Function;

/**
 * What an engine knows a block by, as a PUT's {@code kvcache-engine-} headers give it: the model,
 * the engine's hash of the block and of its parent, its tokens (none where the engine's plug-in
 * point does not give them: then its block size), and the LoRA adapter it was computed with. The
 * server's KV events name the block so.
 *
 * @param parent the parent block's hash, or null for the first block of a prompt
 * @param lora the LoRA adapter's name, or null
 */
public record EngineBlock(String model, long hash, Long parent, int[] tokens, int blockSize,
    String lora) {

  /** The most tokens a block may name. */
  public static final int MAX_TOKENS = 4096;

  public EngineBlock {
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(tokens, "tokens");
  }

  /**
   * The engine block a PUT's headers name, or null if they name none (no {@value Wire#ENGINE_HASH}).
   *
   * @param header a header's value by its (lowercase) name, or null without it
   * @throws IllegalArgumentException why the headers do not name a block: a hash that is no
   *     unsigned 64-bit number, no model, neither tokens nor a block size, a block size other than
   *     the tokens' number
   */
  public static EngineBlock fromHeaders(Function<String, String> header) {
    String hash = header.apply(Wire.ENGINE_HASH);
    if (hash == null) {
      return null;
    }
    String model = header.apply(Wire.ENGINE_MODEL);
    if (model == null || model.isBlank() || model.indexOf('@') >= 0) {
      throw new IllegalArgumentException(Wire.ENGINE_HASH + " needs " + Wire.ENGINE_MODEL
          + ", the model's name without '@'" + (model == null ? "" : ", got '" + model + "'"));
    }
    String parent = header.apply(Wire.ENGINE_PARENT);
    String tokenIds = header.apply(Wire.ENGINE_TOKENS);
    int[] tokens = tokenIds == null ? new int[0] : tokens(tokenIds);
    String size = header.apply(Wire.ENGINE_BLOCK_SIZE);
    int blockSize = tokens.length;
    if (size != null) {
      try {
        blockSize = Integer.parseInt(size.trim());
      } catch (NumberFormatException e) {
        blockSize = -1;
      }
      if (blockSize < 1 || tokens.length > 0 && blockSize != tokens.length) {
        throw new IllegalArgumentException(Wire.ENGINE_BLOCK_SIZE + " '" + size + "' is not "
            + (tokens.length > 0 ? "the " + tokens.length + " tokens of " + Wire.ENGINE_TOKENS
                : "a number of tokens"));
      }
    } else if (tokens.length == 0) {
      throw new IllegalArgumentException(Wire.ENGINE_HASH + " needs " + Wire.ENGINE_TOKENS
          + " (the block's token ids, comma-separated) or " + Wire.ENGINE_BLOCK_SIZE);
    }
    String lora = header.apply(Wire.ENGINE_LORA);
    return new EngineBlock(model.trim(), hash(Wire.ENGINE_HASH, hash),
        parent == null ? null : hash(Wire.ENGINE_PARENT, parent), tokens, blockSize,
        lora == null || lora.isBlank() ? null : lora.trim());
  }

  private static long hash(String name, String value) {
    try {
      return Long.parseUnsignedLong(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " '" + value
          + "' is not an unsigned 64-bit number in decimal");
    }
  }

  private static int[] tokens(String value) {
    String[] parts = value.split(",", -1);
    if (parts.length > MAX_TOKENS) {
      throw new IllegalArgumentException(Wire.ENGINE_TOKENS + " names " + parts.length
          + " tokens, more than " + MAX_TOKENS);
    }
    int[] tokens = new int[parts.length];
    for (int i = 0; i < parts.length; i++) {
      try {
        tokens[i] = Integer.parseInt(parts[i].trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(Wire.ENGINE_TOKENS + " has '" + parts[i]
            + "' at " + i + ", not a token id");
      }
      if (tokens[i] < 0) {
        throw new IllegalArgumentException(Wire.ENGINE_TOKENS + " has a negative token id at " + i);
      }
    }
    return tokens;
  }

  /** An engine block as a tier kept it ({@link #tag}), with the namespace of its storage key. */
  public record Kept(long namespace, EngineBlock block) {}

  /** The first byte of a tag: the tag's own format. */
  private static final int TAG_FORMAT = 1;
  private static final int HAS_PARENT = 1;
  private static final int HAS_LORA = 2;

  /**
   * This block as a tier keeps it with its bytes ({@link dev.kvcache.spi.BlockTags}), under a
   * storage key of namespace tag {@code namespace} (0: none): its fields in binary, the tokens
   * left out if they would not fit in {@link BlockTags#MAX_TAG_BYTES} (the block size stays). Null
   * if even that does not fit (a model or LoRA name of thousands of bytes).
   */
  byte[] tag(long namespace) {
    for (int[] withTokens : new int[][] {tokens, new int[0]}) {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + 4 * withTokens.length);
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        out.writeByte(TAG_FORMAT);
        out.writeLong(namespace);
        out.writeLong(hash);
        out.writeByte((parent != null ? HAS_PARENT : 0) | (lora != null ? HAS_LORA : 0));
        if (parent != null) {
          out.writeLong(parent);
        }
        out.writeInt(blockSize);
        out.writeUTF(model);
        if (lora != null) {
          out.writeUTF(lora);
        }
        out.writeInt(withTokens.length);
        for (int t : withTokens) {
          out.writeInt(t);
        }
      } catch (IOException e) {
        continue; // a name longer than 65535 bytes
      }
      if (bytes.size() <= BlockTags.MAX_TAG_BYTES) {
        return bytes.toByteArray();
      }
    }
    return null;
  }

  /**
   * The engine block a tier kept as {@code tag} ({@link #tag}); null if the tag is not one (a tag
   * of a format this build does not know, or cut short).
   */
  static Kept fromTag(byte[] tag) {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(tag))) {
      if (in.readUnsignedByte() != TAG_FORMAT) {
        return null;
      }
      long namespace = in.readLong();
      long hash = in.readLong();
      int flags = in.readUnsignedByte();
      Long parent = (flags & HAS_PARENT) != 0 ? in.readLong() : null;
      int blockSize = in.readInt();
      String model = in.readUTF();
      String lora = (flags & HAS_LORA) != 0 ? in.readUTF() : null;
      int n = in.readInt();
      if (n < 0 || n > MAX_TOKENS || blockSize < 1 || n > 0 && n != blockSize) {
        return null;
      }
      int[] tokens = new int[n];
      for (int i = 0; i < n; i++) {
        tokens[i] = in.readInt();
      }
      if (in.read() != -1) {
        return null;
      }
      return new Kept(namespace, new EngineBlock(model, hash, parent, tokens, blockSize, lora));
    } catch (IOException e) {
      return null;
    }
  }

  /** This block stored in {@code medium}. */
  KvEvent.BlockStored stored(String medium) {
    return new KvEvent.BlockStored(new long[] {hash}, parent, tokens, blockSize, lora, medium);
  }

  /** This block removed from {@code medium}. */
  KvEvent.BlockRemoved removed(String medium) {
    return new KvEvent.BlockRemoved(new long[] {hash}, medium);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof EngineBlock b && hash == b.hash && model.equals(b.model)
        && Objects.equals(parent, b.parent) && Arrays.equals(tokens, b.tokens)
        && blockSize == b.blockSize && Objects.equals(lora, b.lora);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(hash) * 31 + model.hashCode();
  }

  @Override
  public String toString() {
    return "EngineBlock[" + model + " " + Long.toUnsignedString(hash) + ", " + tokens.length
        + " tokens]";
  }
}
