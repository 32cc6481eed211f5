/**
 * Benchmarks of the object tier against an S3 client reading and writing the same objects.
 *
 * <p>May import: kvcache-core, kvcache-s3, the AWS SDK.
 */
package dev.kvcache.bench.objects;
