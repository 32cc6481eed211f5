/**
 * The object tier's index, listings, fleet, deletes, back-off and downloads; not API.
 *
 * <p>May import: kvcache-core's API and {@code spi}, the AWS SDK, and {@code dev.kvcache.s3}.
 */
package dev.kvcache.s3.internal;
