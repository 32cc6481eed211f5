package dev.kvcache.client;

import dev.kvcache.GetStatus;
import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http2.Http2Headers;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * The blocks of a batch answer, each written as its bytes arrive into the caller's buffer for its
 * key, never past the length the server announced for it. A buffer's position moves only once its
 * whole block is in; a block too large for its buffer is read past. An answer that is not a 200 is
 * kept as text for the error.
 */
final class BatchSink implements ResponseSink {

  /** The answer's header: each key's block length in the body, 0 when not cached. */
  static final String LENGTHS_HEADER = "kvcache-block-lengths";

  private final List<ByteBuffer> dsts;
  private final int maxBlockBytes;
  private final ResponseSink.Text error = new ResponseSink.Text();
  private int status;
  private int[] lengths;
  /** By key: null until answered. */
  private GetStatus[] results;
  /** The block being received, and how many of its bytes are in. */
  private int block = -1;
  private int received;
  /** Where its bytes go; null when its buffer is too small. */
  private ByteBuffer target;

  /** Into {@code dsts}, one buffer per key of the request, from each one's position. */
  BatchSink(List<ByteBuffer> dsts, int maxBlockBytes) {
    this.dsts = dsts;
    this.maxBlockBytes = maxBlockBytes;
  }

  @Override
  public boolean begin(int status, Http2Headers headers) {
    this.status = status;
    if (status != 200) {
      return true;
    }
    CharSequence header = headers.get(LENGTHS_HEADER);
    if (header == null) {
      throw new IllegalStateException("the server's batch answer has no " + LENGTHS_HEADER);
    }
    lengths = parseLengths(header.toString());
    long total = 0;
    for (int length : lengths) {
      total += length;
    }
    Long contentLength = headers.getLong("content-length");
    if (contentLength != null && contentLength != total) {
      throw new IllegalStateException("the server's batch answer has " + contentLength
          + " bytes but its lengths add up to " + total);
    }
    results = new GetStatus[dsts.size()];
    nextBlock();
    return true;
  }

  private int[] parseLengths(String header) {
    String[] parts = header.isEmpty() ? new String[0] : header.split(",");
    if (parts.length == 0 || parts.length > dsts.size()) {
      throw new IllegalStateException("the server answered " + parts.length + " lengths for "
          + dsts.size() + " keys");
    }
    int[] parsed = new int[parts.length];
    for (int i = 0; i < parts.length; i++) {
      try {
        parsed[i] = Integer.parseInt(parts[i].trim());
      } catch (NumberFormatException e) {
        parsed[i] = -1;
      }
      if (parsed[i] < 0 || parsed[i] > maxBlockBytes) {
        throw new IllegalStateException("the server answered a block length of '" + parts[i] + "'");
      }
    }
    return parsed;
  }

  /** Moves to the next block with bytes, answering the keys not cached on the way. */
  private void nextBlock() {
    for (block++; block < lengths.length && lengths[block] == 0; block++) {
      results[block] = GetStatus.MISS;
    }
    received = 0;
    if (block < lengths.length) {
      ByteBuffer dst = dsts.get(block);
      target = lengths[block] > dst.remaining() ? null : dst.duplicate();
    }
  }

  @Override
  public void accept(ByteBuf content) {
    if (status != 200) {
      error.accept(content);
      return;
    }
    while (content.isReadable()) {
      if (block >= lengths.length) {
        throw new IllegalStateException("the server sent more bytes than its lengths add up to");
      }
      int n = Math.min(content.readableBytes(), lengths[block] - received);
      if (target == null) {
        content.skipBytes(n);
      } else {
        ByteBuffer part = target.duplicate();
        part.limit(part.position() + n);
        content.readBytes(part);
        target.position(part.position());
      }
      received += n;
      if (received == lengths[block]) {
        if (target == null) {
          results[block] = GetStatus.BUFFER_TOO_SMALL;
        } else {
          dsts.get(block).position(target.position());
          results[block] = GetStatus.HIT;
        }
        nextBlock();
      }
    }
  }

  @Override
  public void end() {
    if (status == 200 && block < lengths.length) {
      throw new IllegalStateException("the batch answer ended " + (lengths[block] - received)
          + " bytes into a block of " + lengths[block]);
    }
  }

  int status() {
    return status;
  }

  /** What became of key {@code i}: null if the server did not answer it (or not whole). */
  GetStatus result(int i) {
    return results == null ? null : results[i];
  }

  String errorText() {
    return error.toString();
  }
}
