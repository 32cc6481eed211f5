package dev.kvcache.server.local;

/** What became of one block of a copy into a client's file ({@link LeaseCopies}). */
enum CopyOutcome {
  /** In the file, with its checksum. */
  copied,
  /** Not held in this process (a remote tier's), or kept without a checksum: read it. */
  elsewhere,
  /** Its bytes do not have the block's checksum; its place in the file holds no block. */
  damaged
}
