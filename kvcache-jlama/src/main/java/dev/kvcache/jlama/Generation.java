package dev.kvcache.jlama;

import java.time.Duration;

/**
 * What {@link CachedGenerator#generate} produced, and what its prompt cost.
 *
 * @param tokens the generated token ids, without the stop token
 * @param text their text
 * @param finish why generation ended
 * @param promptTokens the prompt's tokens
 * @param loadedTokens the prompt's leading tokens whose keys and values came from the cache
 * @param timeToFirstToken from the call to the first token sampled: lookup, loads, prefill
 * @param storedBlocks the blocks stored in the cache for the prompt and the generated tokens
 */
public record Generation(int[] tokens, String text, Finish finish, int promptTokens,
    int loadedTokens, Duration timeToFirstToken, int storedBlocks) {

  /** Why generation ended. */
  public enum Finish {
    /** The model sampled one of its stop tokens. */
    STOP,
    /** The token limit asked for, or the model's context, was reached. */
    LENGTH
  }
}
