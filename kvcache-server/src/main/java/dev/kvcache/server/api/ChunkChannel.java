package dev.kvcache.server.api;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;

/**
 * A channel that hands each buffer written to it to a consumer, which takes all of its bytes: how
 * the codec's channel methods feed a block writer or an answer, one chunk at a time.
 */
final class ChunkChannel implements WritableByteChannel {

  /** Takes all of a buffer's remaining bytes. */
  interface Consumer {
    void accept(ByteBuffer chunk) throws IOException;
  }

  private final Consumer consumer;

  ChunkChannel(Consumer consumer) {
    this.consumer = consumer;
  }

  @Override
  public int write(ByteBuffer src) throws IOException {
    int n = src.remaining();
    consumer.accept(src);
    return n;
  }

  @Override
  public boolean isOpen() {
    return true;
  }

  @Override
  public void close() {}
}
