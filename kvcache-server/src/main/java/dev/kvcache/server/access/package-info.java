/**
 * Who may do what: the namespaces the server serves, the keys their blocks are stored under,
 * bearer tokens and their rights, and the refusal to start open beyond loopback.
 *
 * <p>May import: kvcache-core's API, {@code wire}, {@code errors}, Micronaut.
 */
package dev.kvcache.server.access;
