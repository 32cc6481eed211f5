/**
 * KV events for cache-aware routers, in vLLM's format: what the cache's tiers store and drop
 * ({@link dev.kvcache.server.events.KvEventFeed}), named by the engine blocks PUTs carry ({@link
 * dev.kvcache.server.events.EngineBlocks}), as {@link dev.kvcache.server.events.KvEvent}s encoded as
 * vLLM's {@code KVEventBatch} and published over ZMQ as vLLM's {@code ZmqEventPublisher} does, with
 * a replay socket.
 *
 * <p>May import: the cache's API and tier SPI, Micronaut, Micrometer, JeroMQ, msgpack-core; no other
 * package of the server.
 */
package dev.kvcache.server.events;
