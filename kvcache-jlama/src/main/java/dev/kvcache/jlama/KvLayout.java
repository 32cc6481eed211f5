package dev.kvcache.jlama;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.safetensors.Config;
import com.github.tjake.jlama.safetensors.DType;
import dev.kvcache.Namespace;
import java.util.Locale;

/**
 * How a block of a Jlama model's keys and values is laid out in the cache: for each layer in
 * order, the keys of the block's tokens, then their values, each token's {@code kvLength} values in
 * the model's working dtype, little-endian, as Jlama keeps them. Keys are kept after RoPE, so a
 * block is valid only at the positions it was computed at, which its chained prefix key fixes.
 *
 * @param layers the model's layers
 * @param kvLength the values of one token's keys (or values) in one layer: key-value heads times
 *     head size
 * @param dtype the working dtype the model computes and keeps its keys and values in (F32 or
 *     BF16)
 * @param blockTokens tokens per block
 */
public record KvLayout(int layers, int kvLength, DType dtype, int blockTokens) {

  public KvLayout {
    if (layers < 1 || kvLength < 1 || blockTokens < 1) {
      throw new IllegalArgumentException("layers, kvLength and blockTokens are at least 1, not "
          + layers + ", " + kvLength + ", " + blockTokens);
    }
    if (dtype != DType.F32 && dtype != DType.BF16) {
      throw new IllegalArgumentException("Jlama keeps keys and values in F32 or BF16, not "
          + dtype + ": load the model with one of them as its working dtype");
    }
    if ((long) layers * 2 * blockTokens * kvLength * dtype.size() > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("a block of " + blockTokens + " tokens of this model "
          + "would be over 2 GiB: use fewer tokens per block");
    }
  }

  /**
   * The layout of {@code model}'s keys and values in blocks of {@code blockTokens} tokens.
   *
   * @throws IllegalArgumentException if the model is split across nodes (its layers or heads
   *     distributed), whose keys and values no one node holds whole
   */
  public static KvLayout of(AbstractModel model, int blockTokens) {
    Config c = model.getConfig();
    if (c.dctx().numberOfLayers != c.numberOfLayers || c.dctx().kvSegmentLength != c.kvLength) {
      throw new IllegalArgumentException("the model is distributed (layers " + c.dctx().layerStart
          + " to " + c.dctx().layerEnd + ", kv segment " + c.dctx().kvSegmentLength + " of "
          + c.kvLength + "): a prefix cache needs a model whose keys and values it holds whole");
    }
    return new KvLayout(c.numberOfLayers, c.kvLength, model.getWorkingDType(), blockTokens);
  }

  /** The bytes of one token's keys (or values) in one layer. */
  public int tokenBytes() {
    return kvLength * dtype.size();
  }

  /** The bytes of one block: every layer's keys and values of its tokens. */
  public int blockBytes() {
    return layers * 2 * blockTokens * tokenBytes();
  }

  /**
   * The namespace of this layout's blocks for the model named {@code model}: its name, dtype and
   * layout, so that blocks of another model, dtype or block size are never found for it. The name
   * must tell the weights apart (two models of the same name share blocks).
   */
  public Namespace namespace(String model) {
    return Namespace.of(model, dtype.name().toLowerCase(Locale.ROOT),
        "jlama-kv/" + layers + "x" + kvLength + "/" + blockTokens + "t");
  }
}
