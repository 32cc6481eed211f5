/**
 * Who may do what: the namespaces the server serves, the keys their blocks are stored under,
 * bearer tokens and their rights (on the API's routes, by the right each route declares, and on
 * the metrics and health endpoints), which peers count as this host, and the refusal to start
 * open beyond loopback.
 *
 * <p>May import: kvcache-core's API, {@code wire}, {@code errors}, Micronaut.
 */
package dev.kvcache.server.access;
