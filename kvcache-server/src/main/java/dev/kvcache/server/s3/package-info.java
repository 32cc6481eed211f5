/**
 * The S3 API on its own port ({@code kvcache.s3.port}, 7071 by default): stock S3 clients store,
 * read, list and delete objects, each a block of the namespace its bucket names, with the
 * protocol of {@code kvcache-s3-api} (signatures, aws-chunked bodies, checksums, S3's XML).
 *
 * <p>May import: {@code dev.kvcache.server.access}, {@code dev.kvcache.server.api}, {@code
 * dev.kvcache.server.cache}, {@code dev.kvcache.server.errors}.
 */
package dev.kvcache.server.s3;
