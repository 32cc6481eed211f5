package dev.kvcache.spi;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockWriter;
import dev.kvcache.PutStatus;
import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A writer that passes every call to another one but its commits: a subclass says what {@link
 * #commit} does around the other writer's commit, and {@link #tryCommit} keeps {@link BlockWriter}'s
 * default (a commit, unless {@link #commitMayWait}), so that it goes through that {@code commit}
 * too, unless the subclass overrides it.
 */
public abstract class ForwardingBlockWriter implements BlockWriter {

  /** The writer the calls go to. */
  protected final BlockWriter delegate;

  protected ForwardingBlockWriter(BlockWriter delegate) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
  }

  @Override
  public BlockKey key() {
    return delegate.key();
  }

  @Override
  public int length() {
    return delegate.length();
  }

  @Override
  public int remaining() {
    return delegate.remaining();
  }

  @Override
  public Optional<PutStatus> rejection() {
    return delegate.rejection();
  }

  @Override
  public void write(ByteBuffer src) {
    delegate.write(src);
  }

  @Override
  public OptionalInt crc32c() {
    return delegate.crc32c();
  }

  @Override
  public boolean commitMayWait() {
    return delegate.commitMayWait();
  }

  @Override
  public boolean writesMayWait() {
    return delegate.writesMayWait();
  }

  @Override
  public void close() {
    delegate.close();
  }
}
