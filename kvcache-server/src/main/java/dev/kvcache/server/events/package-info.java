/**
 * KV events for cache-aware routers, in vLLM's format: {@link
 * dev.kvcache.server.events.KvEvent}s encoded as vLLM's {@code KVEventBatch} and published over ZMQ
 * as vLLM's {@code ZmqEventPublisher} does, with a replay socket. Not yet fed by the cache: the
 * engine's block hashes and tokens the events name are to come with each PUT.
 *
 * <p>May import: JeroMQ, msgpack-core; no other package of the server.
 */
package dev.kvcache.server.events;
