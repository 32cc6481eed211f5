package dev.kvcache.jlama;

import com.github.tjake.jlama.tensor.AbstractTensor;
import java.time.Duration;

/**
 * What {@link PrefixCache#prefill} did: the model's output for the tokens it computed (one row
 * per token, the last one's for sampling the next token; the caller closes it), and how many
 * tokens were loaded and computed, in what time.
 *
 * @param output the last layer's output of the computed tokens, closed by the caller
 * @param loadedTokens the leading tokens whose keys and values were loaded from the cache and not
 *     computed again (the last token is always computed)
 * @param computedTokens the tokens the model computed, from {@code loadedTokens} on
 * @param foundBlocks the leading blocks the cache held when asked
 * @param presentBlocks the leading blocks the cache holds as far as this prefill knows: those
 *     loaded, up to the first that could not be (gone, or damaged and dropped), or all those found
 *     when computing them was expected to be faster; the blocks after them are worth storing
 * @param load the time the lookup and the loads took
 * @param compute the time the model's forward pass took
 */
public record Prefill(AbstractTensor output, int loadedTokens, int computedTokens,
    int foundBlocks, int presentBlocks, Duration load, Duration compute) {}
