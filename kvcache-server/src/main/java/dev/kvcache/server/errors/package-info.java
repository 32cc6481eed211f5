/**
 * How the server refuses a request: the JSON error body every refusal carries, and the answers
 * to errors Micronaut meets by itself.
 *
 * <p>May import: Micronaut alone.
 */
package dev.kvcache.server.errors;
