/**
 * The HTTP API as Micronaut routes it: one block, batches, lookups and pins, the object tier,
 * the OpenAPI document; bodies streamed into the cache and answers from its leases.
 *
 * <p>May import: kvcache-core, {@code errors}, {@code access}, {@code cache}, Micronaut and Netty.
 */
package dev.kvcache.server.api;
