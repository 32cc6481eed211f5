package dev.kvcache.client;

import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http2.Http2Headers;
import java.nio.ByteBuffer;

/**
 * A block's bytes, written as they arrive into the caller's buffer (or a new one), never past the
 * length the server announced. Until {@link #end()} saw every byte, the caller's buffer position
 * does not move; an answer that is not a 200 is kept as text for the error.
 */
final class BlockSink implements ResponseSink {

  private final ByteBuffer dst;
  private final int maxBytes;
  private final ResponseSink.Text error = new ResponseSink.Text();
  private int status;
  private ByteBuffer target;
  private boolean tooSmall;
  private boolean complete;

  /** Into {@code dst} from its position, or into a new direct buffer if {@code dst} is null. */
  BlockSink(ByteBuffer dst, int maxBytes) {
    this.dst = dst;
    this.maxBytes = maxBytes;
  }

  @Override
  public boolean begin(int status, Http2Headers headers) {
    this.status = status;
    if (status != 200) {
      return true;
    }
    Long length = headers.getLong("content-length");
    if (length == null || length < 1 || length > maxBytes) {
      throw new IllegalStateException("the server answered a block of "
          + (length == null ? "unknown length" : length + " bytes"));
    }
    if (dst == null) {
      target = ByteBuffer.allocateDirect(length.intValue());
      return true;
    }
    if (length > dst.remaining()) {
      tooSmall = true;
      return false;
    }
    target = dst.duplicate();
    target.limit(target.position() + length.intValue());
    return true;
  }

  @Override
  public void accept(ByteBuf content) {
    if (status != 200) {
      error.accept(content);
      return;
    }
    int n = content.readableBytes();
    if (n > target.remaining()) {
      throw new IllegalStateException("the server sent more bytes than its Content-Length");
    }
    ByteBuffer part = target.duplicate();
    part.limit(part.position() + n);
    content.readBytes(part);
    target.position(part.position());
  }

  @Override
  public void end() {
    if (status == 200) {
      if (target.hasRemaining()) {
        throw new IllegalStateException("the block ended " + target.remaining() + " bytes short");
      }
      if (dst != null) {
        dst.position(target.position());
      }
      complete = true;
    }
  }

  int status() {
    return status;
  }

  boolean tooSmall() {
    return tooSmall;
  }

  /** True once every byte of a 200 answer is in place. */
  boolean complete() {
    return complete;
  }

  /** The new buffer holding the block, read-only, once complete. */
  ByteBuffer block() {
    return target.flip().asReadOnlyBuffer();
  }

  String errorText() {
    return error.toString();
  }
}
