/**
 * The object tier: blocks as objects in an S3-compatible bucket a fleet of servers shares ({@link
 * dev.kvcache.s3.S3Tier}).
 *
 * <p>May import: kvcache-core's API and {@code spi}, the AWS SDK, and {@code internal}.
 */
package dev.kvcache.s3;
