/**
 * AWS Signature Version 4 as S3 checks it: {@link dev.kvcache.s3api.auth.SigV4Verifier} verifies a
 * request signed in its {@code Authorization} header or presigned in its query, and gives the
 * {@link dev.kvcache.s3api.auth.ChunkSigner} that a body of signed chunks is checked with.
 *
 * <p>May import: the JDK, {@code dev.kvcache.s3api}.
 */
package dev.kvcache.s3api.auth;
