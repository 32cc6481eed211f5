package dev.kvcache.s3api.auth;

/**
 * A request whose signature the secret of {@code accessKey} gives.
 *
 * @param accessKey who signed it
 * @param payload how its body is sent
 * @param payloadSha256 the hex SHA-256 the body must have ({@link Payload#SIGNED}); else null
 * @param chunks the signatures its chunks must have ({@link Payload#chunksSigned}); else null
 */
public record Verified(String accessKey, Payload payload, String payloadSha256,
    ChunkSigner chunks) {}
