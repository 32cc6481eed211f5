package dev.kvcache.jlama;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.PrefixKeys;
import dev.kvcache.PrefixLocation;
import dev.kvcache.PutStatus;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Jlama model's prefix cache over any {@link KvCache}: {@link #prefill} loads the keys and
 * values of the longest stored prefix of a prompt into a session's KV buffer and has the model
 * compute only the rest; {@link #store} keeps the whole blocks a session computed. Blocks are keyed
 * by the chained prefix keys of their tokens ({@link PrefixKeys}) in the namespace of the model and
 * its layout ({@link KvLayout#namespace}), so a block is found only by a prompt that starts with
 * the same tokens, for the same model, dtype and block size.
 *
 * <p>The cache checks every block it returns (a damaged one is a miss), and a block of the wrong
 * length is not loaded: what is not loaded is computed, and the output is the model's either way.
 * Whether found blocks are loaded at all is decided by {@link LoadOrPrefill}, from the cache's
 * estimate of the read and this engine's measured prefill speed.
 *
 * <p>Thread-safe as its cache is; each call works on the KV buffer it is given.
 */
public final class PrefixCache {

  private static final Logger log = LoggerFactory.getLogger(PrefixCache.class);

  /** Blocks read or written in one call to the cache, for a remote tier's batches. */
  private static final int BATCH = 16;

  private final AbstractModel model;
  private final KvCache cache;
  private final KvLayout layout;
  private final PrefixKeys keys;
  private final LoadOrPrefill decisions;

  /**
   * @param model the model whose keys and values are kept: F32 or BF16 working dtype, not
   *     distributed
   * @param cache where they are kept: an embedded cache, or a remote tier over kvcache-server
   * @param modelName a name that tells the model's weights apart: blocks are shared by every
   *     model of the same name, dtype and layout
   * @param blockTokens tokens per block
   */
  public PrefixCache(AbstractModel model, KvCache cache, String modelName, int blockTokens) {
    this(model, cache, modelName, blockTokens, LoadOrPrefill.measured());
  }

  /**
   * A prefix cache whose found blocks are loaded or computed as {@code decisions} decides
   * ({@link LoadOrPrefill#alwaysLoad()} to load them whatever the speeds).
   */
  public PrefixCache(AbstractModel model, KvCache cache, String modelName, int blockTokens,
      LoadOrPrefill decisions) {
    this.decisions = Objects.requireNonNull(decisions, "decisions");
    this.model = Objects.requireNonNull(model, "model");
    this.cache = Objects.requireNonNull(cache, "cache");
    this.layout = KvLayout.of(model, blockTokens);
    this.keys = PrefixKeys.of(layout.namespace(modelName), blockTokens);
  }

  public AbstractModel model() {
    return model;
  }

  public KvCache cache() {
    return cache;
  }

  public KvLayout layout() {
    return layout;
  }

  /** The keys of prompts' blocks, in this cache's namespace. */
  public PrefixKeys prefixKeys() {
    return keys;
  }

  /** The decisions to load or compute found blocks, and the speeds they are made from. */
  public LoadOrPrefill decisions() {
    return decisions;
  }

  /**
   * Fills positions 0 to {@code tokens.length - 1} of {@code kv}: the stored blocks that start
   * {@code tokens} are loaded (unless computing them is expected to be faster), and the model
   * computes the tokens after them, at least the last one, whose output samples the next token
   * (computed again over its loaded keys and values when its block was loaded whole).
   *
   * @param tokens the prompt's token ids, its BOS token first if the model takes one
   * @param kv an empty session's KV buffer
   * @throws IllegalArgumentException if there are no tokens, or more than the model's context
   */
  public Prefill prefill(int[] tokens, KvBufferCache.KvBuffer kv) {
    int context = model.getConfig().contextLength;
    if (tokens.length == 0 || tokens.length > context) {
      throw new IllegalArgumentException("a prompt has 1 to " + context + " tokens (the model's "
          + "context), not " + tokens.length);
    }
    long start = System.nanoTime();
    // every whole block may be loaded, the last token's too: that token is computed again
    // anyway (its output gives the next token), over the same keys and values
    List<BlockKey> candidates = keys.keysFor(tokens);
    int found = 0;
    int loaded = 0;
    int present = 0;
    if (!candidates.isEmpty()) {
      PrefixLocation where = cache.locatePrefix(candidates);
      found = where.blocks();
      int wanted = decisions.toLoad(where, layout.blockTokens());
      loaded = load(candidates.subList(0, wanted), kv);
      present = wanted == 0 ? found : loaded;
      if (loaded > 0) {
        decisions.loaded(loaded, System.nanoTime() - start);
      }
    }
    long loadNanos = System.nanoTime() - start;
    int from = Math.min(loaded * layout.blockTokens(), tokens.length - 1);
    AbstractTensor output = model.batchForward(Arrays.copyOfRange(tokens, from, tokens.length),
        from, kv);
    long computeNanos = System.nanoTime() - start - loadNanos;
    decisions.prefilled(tokens.length - from, computeNanos);
    return new Prefill(output, from, tokens.length - from, found, present,
        Duration.ofNanos(loadNanos), Duration.ofNanos(computeNanos));
  }

  /** Loads {@code wanted}'s blocks into {@code kv} in order, up to the first not found. */
  private int load(List<BlockKey> wanted, KvBufferCache.KvBuffer kv) {
    ByteBuffer scratch = null;
    for (int first = 0; first < wanted.size(); first += BATCH) {
      List<BlockLease> leases = cache.getAll(wanted.subList(first,
          Math.min(wanted.size(), first + BATCH)));
      try {
        for (int i = 0; i < leases.size(); i++) {
          BlockLease lease = leases.get(i);
          if (lease.status() != GetStatus.HIT) {
            return first + i;
          }
          if (lease.length() != layout.blockBytes()) {
            log.warn("block {} is {} bytes, not the {} of its layout: computed instead",
                lease.key(), lease.length(), layout.blockBytes());
            return first + i;
          }
          ByteBuffer bytes = lease.bytes();
          if (!bytes.isDirect()) {
            scratch = scratch == null ? ByteBuffer.allocateDirect(layout.blockBytes())
                : scratch.clear();
            bytes = scratch.put(bytes).flip();
          }
          KvBlocks.write(layout, bytes, first + i, kv);
        }
      } finally {
        leases.forEach(BlockLease::close);
      }
    }
    return wanted.size();
  }

  /**
   * Stores the whole blocks of {@code tokens} from block {@code fromBlock} on, read from {@code
   * kv}, which holds the keys and values of every one of {@code tokens}.
   *
   * @return how many blocks the cache stored (it may refuse some: full, or evicting)
   */
  public int store(int[] tokens, KvBufferCache.KvBuffer kv, int fromBlock) {
    List<BlockKey> all = keys.keysFor(tokens);
    int stored = 0;
    List<ByteBuffer> scratch = new ArrayList<>();
    for (int first = Math.max(0, fromBlock); first < all.size(); first += BATCH) {
      int end = Math.min(all.size(), first + BATCH);
      List<ByteBuffer> blocks = new ArrayList<>(end - first);
      for (int b = first; b < end; b++) {
        if (scratch.size() == b - first) {
          scratch.add(ByteBuffer.allocateDirect(layout.blockBytes()));
        }
        ByteBuffer bytes = scratch.get(b - first).clear();
        KvBlocks.read(layout, kv, b, bytes);
        blocks.add(bytes);
      }
      for (PutStatus status : cache.putAll(all.subList(first, end), blocks)) {
        if (status == PutStatus.STORED) {
          stored++;
        } else {
          log.debug("a block of {} tokens was not stored: {}", layout.blockTokens(), status);
        }
      }
    }
    return stored;
  }
}
