package dev.kvcache.jlama;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Writes Llama models of random weights that Jlama loads (no model hub is reachable here): a
 * {@code config.json}, a character-level {@code tokenizer.json} (one token per printable ASCII
 * character and newline, besides {@code <unk>}, {@code <s>} and {@code </s>}: any text it
 * decodes encodes to the same tokens again), a {@code
 * tokenizer_config.json} with a chat template, and one {@code model.safetensors} of F32 weights.
 * Weights are drawn with a spread of 1/sqrt(fan-in), so that what the model generates depends on
 * its whole context instead of repeating one token.
 */
public final class TestModels {

  /** {@code <unk>}, {@code <s>}, {@code </s>}, newline and the 95 printable ASCII characters. */
  public static final int VOCABULARY = 99;
  static final int BOS = 1;
  static final int EOS = 2;

  /** The shape of a model. */
  public record Shape(int layers, int hidden, int heads, int kvHeads, int intermediate, int context) {

    /** A small model, quick to run: 2 layers of 64, grouped-query attention. */
    public static Shape small() {
      return new Shape(2, 64, 4, 2, 128, 2048);
    }
  }

  private TestModels() {}

  /** Writes a model of {@code shape} with weights from {@code seed} into {@code dir}. */
  public static Path llama(Path dir, Shape shape, long seed) throws IOException {
    Files.createDirectories(dir);
    ObjectMapper json = new ObjectMapper();
    ObjectNode config = json.createObjectNode()
        .put("model_type", "llama").put("hidden_size", shape.hidden())
        .put("intermediate_size", shape.intermediate())
        .put("num_attention_heads", shape.heads()).put("num_key_value_heads", shape.kvHeads())
        .put("num_hidden_layers", shape.layers())
        .put("max_position_embeddings", shape.context()).put("rms_norm_eps", 1e-5)
        .put("vocab_size", VOCABULARY).put("bos_token_id", BOS).put("eos_token_id", EOS)
        .put("hidden_act", "silu").put("rope_theta", 10000.0).put("torch_dtype", "float32")
        .put("tie_word_embeddings", false);
    config.putArray("architectures").add("LlamaForCausalLM");
    json.writerWithDefaultPrettyPrinter().writeValue(dir.resolve("config.json").toFile(), config);
    writeTokenizer(json, dir);
    writeWeights(dir.resolve("model.safetensors"), shape, seed);
    return dir;
  }

  private static void writeTokenizer(ObjectMapper json, Path dir) throws IOException {
    Map<String, Integer> vocabulary = new LinkedHashMap<>();
    vocabulary.put("<unk>", 0);
    vocabulary.put("<s>", BOS);
    vocabulary.put("</s>", EOS);
    vocabulary.put("\n", 3);
    for (char c = ' '; c <= '~'; c++) {
      vocabulary.put(String.valueOf(c), vocabulary.size());
    }
    ObjectNode tokenizer = json.createObjectNode().put("version", "1.0");
    var added = tokenizer.putArray("added_tokens");
    for (String special : new String[] {"<unk>", "<s>", "</s>"}) {
      added.addObject().put("id", vocabulary.get(special)).put("content", special)
          .put("special", true).put("single_word", false).put("lstrip", false)
          .put("rstrip", false).put("normalized", false);
    }
    tokenizer.putNull("normalizer");
    tokenizer.putNull("pre_tokenizer");
    ObjectNode model = tokenizer.putObject("model").put("type", "BPE")
        .put("unk_token", "<unk>").put("fuse_unk", false).put("byte_fallback", false)
        .put("ignore_merges", false);
    ObjectNode vocab = model.putObject("vocab");
    vocabulary.forEach(vocab::put);
    model.putArray("merges");
    json.writerWithDefaultPrettyPrinter().writeValue(dir.resolve("tokenizer.json").toFile(),
        tokenizer);

    ObjectNode tokenizerConfig = json.createObjectNode().put("legacy", false)
        .put("bos_token", "<s>").put("eos_token", "</s>")
        .put("chat_template", "{% for message in messages %}<{{ message['role'] }}>"
            + "{{ message['content'] }}\n{% endfor %}{% if add_generation_prompt %}<assistant>"
            + "{% endif %}");
    json.writerWithDefaultPrettyPrinter().writeValue(
        dir.resolve("tokenizer_config.json").toFile(), tokenizerConfig);
  }

  private static void writeWeights(Path file, Shape s, long seed) throws IOException {
    int headSize = s.hidden() / s.heads();
    Map<String, int[]> tensors = new LinkedHashMap<>();
    tensors.put("model.embed_tokens.weight", new int[] {VOCABULARY, s.hidden()});
    for (int l = 0; l < s.layers(); l++) {
      String p = "model.layers." + l + ".";
      tensors.put(p + "self_attn.q_proj.weight", new int[] {s.heads() * headSize, s.hidden()});
      tensors.put(p + "self_attn.k_proj.weight", new int[] {s.kvHeads() * headSize, s.hidden()});
      tensors.put(p + "self_attn.v_proj.weight", new int[] {s.kvHeads() * headSize, s.hidden()});
      tensors.put(p + "self_attn.o_proj.weight", new int[] {s.hidden(), s.heads() * headSize});
      tensors.put(p + "mlp.gate_proj.weight", new int[] {s.intermediate(), s.hidden()});
      tensors.put(p + "mlp.up_proj.weight", new int[] {s.intermediate(), s.hidden()});
      tensors.put(p + "mlp.down_proj.weight", new int[] {s.hidden(), s.intermediate()});
      tensors.put(p + "input_layernorm.weight", new int[] {s.hidden()});
      tensors.put(p + "post_attention_layernorm.weight", new int[] {s.hidden()});
    }
    tensors.put("model.norm.weight", new int[] {s.hidden()});
    tensors.put("lm_head.weight", new int[] {VOCABULARY, s.hidden()});

    ObjectMapper json = new ObjectMapper();
    ObjectNode header = json.createObjectNode();
    header.putObject("__metadata__").put("format", "pt");
    long offset = 0;
    for (Map.Entry<String, int[]> t : tensors.entrySet()) {
      long bytes = 4L * count(t.getValue());
      ObjectNode info = header.putObject(t.getKey()).put("dtype", "F32");
      var shape = info.putArray("shape");
      for (int d : t.getValue()) {
        shape.add(d);
      }
      info.putArray("data_offsets").add(offset).add(offset + bytes);
      offset += bytes;
    }
    byte[] head = json.writeValueAsString(header).getBytes(StandardCharsets.UTF_8);
    int padded = (head.length + 7) / 8 * 8;
    SplittableRandom random = new SplittableRandom(seed);
    try (OutputStream out = Files.newOutputStream(file)) {
      ByteBuffer prefix = ByteBuffer.allocate(8 + padded).order(ByteOrder.LITTLE_ENDIAN)
          .putLong(padded).put(head);
      while (prefix.hasRemaining()) {
        prefix.put((byte) ' ');
      }
      out.write(prefix.array());
      ByteBuffer chunk = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
      for (Map.Entry<String, int[]> t : tensors.entrySet()) {
        int[] dims = t.getValue();
        boolean norm = dims.length == 1;
        double spread = norm ? 0 : 1 / Math.sqrt(dims[dims.length - 1]);
        for (long i = count(dims); i > 0; i--) {
          chunk.putFloat(norm ? 1f : (float) (random.nextGaussian() * spread));
          if (!chunk.hasRemaining()) {
            out.write(chunk.array(), 0, chunk.position());
            chunk.clear();
          }
        }
      }
      out.write(chunk.array(), 0, chunk.position());
    }
  }

  private static long count(int[] dims) {
    long n = 1;
    for (int d : dims) {
      n *= d;
    }
    return n;
  }
}
