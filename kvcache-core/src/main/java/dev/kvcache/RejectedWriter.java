package dev.kvcache;

import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.Optional;

/** The writer returned when no room could be reserved for a block. */
final class RejectedWriter implements BlockWriter {
  private final BlockKey key;
  private final int length;
  private final Optional<PutStatus> reason;

  RejectedWriter(BlockKey key, int length, PutStatus reason) {
    if (reason != PutStatus.REJECTED_TOO_LARGE && reason != PutStatus.REJECTED_NO_SPACE) {
      throw new IllegalArgumentException("not a rejection: " + reason);
    }
    this.key = Objects.requireNonNull(key, "key");
    this.length = length;
    this.reason = Optional.of(reason);
  }

  @Override
  public BlockKey key() {
    return key;
  }

  @Override
  public int length() {
    return length;
  }

  @Override
  public int remaining() {
    return 0;
  }

  @Override
  public Optional<PutStatus> rejection() {
    return reason;
  }

  @Override
  public void write(ByteBuffer src) {
    throw refused();
  }

  @Override
  public PutStatus commit() {
    throw refused();
  }

  private IllegalStateException refused() {
    return new IllegalStateException(
        "the writer of block " + key + " was rejected (" + reason.get() + "): check rejection()");
  }

  @Override
  public void close() {}
}
