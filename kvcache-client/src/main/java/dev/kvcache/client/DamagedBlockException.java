package dev.kvcache.client;

import dev.kvcache.wire.Wire;

/**
 * A block whose bytes arrived without the CRC32C the server sent with them: damaged on the way, or
 * where the server keeps it. Such a block is read again once, then counted as a miss ({@link
 * RemoteTier#damagedBlocks()}); its bytes are never reported as read.
 */
final class DamagedBlockException extends IllegalStateException {

  private static final long serialVersionUID = 1L;

  DamagedBlockException(int actual, int expected) {
    super("the block's bytes have the CRC32C " + Wire.checksum(actual) + ", the server sent "
        + Wire.checksum(expected) + ": damaged");
  }
}
