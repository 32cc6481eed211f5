/**
 * The S3 protocol as kvcache-server speaks it to stock S3 clients (boto3, the AWS SDKs, awscrt):
 * requests signed with SigV4 ({@link dev.kvcache.s3api.auth}), bodies in {@code aws-chunked}
 * frames with trailing checksums ({@link dev.kvcache.s3api.body}), and the errors S3 gives ({@link
 * dev.kvcache.s3api.S3Error}). It depends on nothing of the server's.
 */
package dev.kvcache.s3api;
