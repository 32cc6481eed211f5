package dev.kvcache.client;

import dev.kvcache.GetStatus;
import dev.kvcache.wire.Wire;
import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http2.Http2Headers;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * The blocks of a batch answer, each written as its bytes arrive into the caller's buffer for its
 * key, never past the length the server announced for it. A buffer's position moves only once its
 * whole block is in and, when verifying, has the CRC32C the server sent for it ({@value
 * Wire#BLOCK_CHECKSUMS}), computed on each part as it is copied; a damaged block is left unanswered
 * and marked {@link #damaged}. A block too large for its buffer is read past. An answer that is
 * not a 200 is kept as text for the error.
 */
final class BatchSink implements ResponseSink {

  /** The answer's header: each key's block length in the body, 0 when not cached. */

  /** The answer's header: the CRC32C of each block in the body, in order. */

  private final List<ByteBuffer> dsts;
  private final int maxBlockBytes;
  private final boolean verify;
  /** By key: the checksum the server sent for its block, when verifying. */
  private int[] expected;
  /** The checksum of the block being received so far, when verifying. */
  private final CRC32C crc = new CRC32C();
  /** By key: whether its block arrived damaged. */
  private boolean[] damaged;
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

  /**
   * Into {@code dsts}, one buffer per key of the request, from each one's position; if {@code
   * verify}, every block is checked against its checksum.
   */
  BatchSink(List<ByteBuffer> dsts, int maxBlockBytes, boolean verify) {
    this.dsts = dsts;
    this.maxBlockBytes = maxBlockBytes;
    this.verify = verify;
  }

  @Override
  public boolean begin(int status, Http2Headers headers) {
    this.status = status;
    if (status != 200) {
      return true;
    }
    CharSequence header = headers.get(Wire.BLOCK_LENGTHS);
    if (header == null) {
      throw new IllegalStateException("the server's batch answer has no " + Wire.BLOCK_LENGTHS);
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
    damaged = new boolean[dsts.size()];
    if (verify) {
      expected = parseChecksums(headers.get(Wire.BLOCK_CHECKSUMS));
    }
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

  /**
   * The checksums of {@value Wire#BLOCK_CHECKSUMS}, spread by key: one for each block in the body.
   *
   * @throws IllegalStateException if the header is missing, malformed or of another count
   */
  private int[] parseChecksums(CharSequence header) {
    if (header == null) {
      throw new IllegalStateException("the server's batch answer has no " + Wire.BLOCK_CHECKSUMS);
    }
    String text = header.toString().trim();
    String[] parts = text.isEmpty() ? new String[0] : text.split(",");
    int[] byKey = new int[lengths.length];
    int next = 0;
    for (int i = 0; i < lengths.length; i++) {
      if (lengths[i] == 0) {
        continue;
      }
      if (next == parts.length) {
        throw new IllegalStateException("the server's batch answer has " + parts.length
            + " checksums for more blocks");
      }
      try {
        byKey[i] = Wire.checksum(parts[next++]);
      } catch (IllegalArgumentException e) {
        throw new IllegalStateException("the server's batch answer has a malformed checksum: "
            + e.getMessage(), e);
      }
    }
    if (next != parts.length) {
      throw new IllegalStateException("the server's batch answer has " + parts.length
          + " checksums for " + next + " blocks");
    }
    return byKey;
  }

  /** Moves to the next block with bytes, answering the keys not cached on the way. */
  private void nextBlock() {
    for (block++; block < lengths.length && lengths[block] == 0; block++) {
      results[block] = GetStatus.MISS;
    }
    received = 0;
    crc.reset();
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
        if (verify) {
          crc.update(part.flip().position(target.position())); // just copied, still cached
        }
        target.position(part.limit());
      }
      received += n;
      if (received == lengths[block]) {
        if (target == null) {
          results[block] = GetStatus.BUFFER_TOO_SMALL;
        } else if (verify && (int) crc.getValue() != expected[block]) {
          damaged[block] = true; // left unanswered: its buffer's position stays
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

  /** Whether key {@code i}'s block arrived whole but without its checksum's bytes. */
  boolean damaged(int i) {
    return damaged != null && damaged[i];
  }

  String errorText() {
    return error.toString();
  }
}
