/**
 * Request bodies as S3 clients send them: {@link dev.kvcache.s3api.body.AwsChunkedDecoder} decodes
 * {@code aws-chunked} frames, checking signed chunks and trailing checksums; {@link
 * dev.kvcache.s3api.body.ChecksumAlgorithm} computes the checksums S3 takes (CRC32, CRC32C,
 * CRC64NVME, SHA-1, SHA-256).
 *
 * <p>May import: the JDK, {@code dev.kvcache.s3api}, {@code dev.kvcache.s3api.auth}.
 */
package dev.kvcache.s3api.body;
