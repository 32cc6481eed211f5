/**
 * A prefix cache for Jlama, the pure-Java inference engine: the keys and values a prefill
 * computes are stored in a {@link dev.kvcache.KvCache} (the embedded RAM-over-disk cache, or a
 * {@code RemoteTier} over kvcache-server) under chained prefix keys, block by block, and a later
 * prompt that starts with the same tokens loads them instead of computing them again.
 *
 * <p>{@link dev.kvcache.jlama.PrefixCache} loads and stores blocks around Jlama's own forward
 * passes; {@link dev.kvcache.jlama.CachedGenerator} is a generation loop over it, from a prompt's
 * tokens or text; {@link dev.kvcache.jlama.ChatSession} keeps a conversation whose every turn
 * reuses the earlier turns' keys and values. Blocks are valid only for the same model, working
 * dtype and absolute positions: the namespace names the model and its KV layout
 * ({@link dev.kvcache.jlama.KvLayout}), and a block's key chains every token before it.
 */
package dev.kvcache.jlama;
