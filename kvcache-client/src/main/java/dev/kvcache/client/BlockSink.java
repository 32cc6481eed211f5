package dev.kvcache.client;

import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.CorruptBlockException;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.wire.Wire;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.util.AsciiString;
import java.nio.ByteBuffer;
import java.util.OptionalInt;
import java.util.zip.CRC32C;

/**
 * A block's bytes, written as they arrive into the caller's buffer (or a new one), never past the
 * length the server announced. Until {@link #end()} saw every byte, the caller's buffer position
 * does not move; an answer that is not a 200 is kept as text for the error.
 *
 * <p>An answer encoded as a codec container ({@value Wire#CODING}) is gathered as it arrives, up to the
 * container of the largest block, and decoded into place by {@link #decode()}, on the caller's
 * thread rather than the event loop's.
 */
final class BlockSink implements ResponseSink {

  /** The content coding of a block sent as a {@link BlockCodec} container. */


  private final ByteBuffer dst;
  private final int maxBytes;
  private final boolean verify;
  /** The checksum the server sent, and the one of the bytes received so far; or null. */
  private Integer expected;
  private CRC32C crc;
  private final ResponseSink.Text error = new ResponseSink.Text();
  private int status;
  private ByteBuffer target;
  private boolean tooSmall;
  private boolean complete;
  /** The container of an encoded answer, until decoded. */
  private ByteBuf encoded;
  private int decodedLength;

  /**
   * Into {@code dst} from its position, or into a new direct buffer if {@code dst} is null; if
   * {@code verify}, an answer must carry its block's checksum ({@value Wire#CHECKSUM}), and is
   * complete only if its bytes have it.
   */
  BlockSink(ByteBuffer dst, int maxBytes, boolean verify) {
    this.dst = dst;
    this.maxBytes = maxBytes;
    this.verify = verify;
  }

  @Override
  public boolean begin(int status, Http2Headers headers) {
    this.status = status;
    if (status != 200) {
      return true;
    }
    CharSequence coding = headers.get("content-encoding");
    if (coding != null) {
      if (verify) {
        expected = Wire.checksum(requireChecksum(headers)); // of the decoded block
      }
      return beginEncoded(coding, headers.getLong(Wire.BLOCK_LENGTH));
    }
    Long length = headers.getLong("content-length");
    if (length == null || length < 1 || length > maxBytes) {
      throw new IllegalStateException("the server answered a block of "
          + (length == null ? "unknown length" : length + " bytes"));
    }
    if (verify) {
      expected = Wire.checksum(requireChecksum(headers));
      crc = new CRC32C();
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

  /**
   * The checksum header of a block's answer, which the server sends with every block.
   *
   * @throws IllegalStateException if it is missing: the answer breaks the protocol
   */
  static CharSequence requireChecksum(Http2Headers headers) {
    CharSequence checksum = headers.get(Wire.CHECKSUM);
    if (checksum == null) {
      throw new IllegalStateException("the server answered a block without its " + Wire.CHECKSUM);
    }
    return checksum;
  }

  private boolean beginEncoded(CharSequence coding, Long length) {
    if (!AsciiString.contentEqualsIgnoreCase(coding, Wire.CODING)) {
      throw new IllegalStateException("the server answered in the unknown coding " + coding);
    }
    if (length == null || length < 1 || length > maxBytes) {
      throw new IllegalStateException("the server answered an encoded block of "
          + (length == null ? "unknown length" : length + " bytes"));
    }
    if (dst != null && length > dst.remaining()) {
      tooSmall = true;
      return false;
    }
    decodedLength = length.intValue();
    encoded = Unpooled.buffer(Math.min(decodedLength, 1 << 20));
    return true;
  }

  @Override
  public void accept(ByteBuf content) {
    if (status != 200) {
      error.accept(content);
      return;
    }
    if (encoded != null) {
      if (encoded.readableBytes() + (long) content.readableBytes()
          > BlockCodec.maxContainerLength(decodedLength)) {
        throw new IllegalStateException("the server sent a container longer than any of a block of "
            + decodedLength + " bytes");
      }
      encoded.writeBytes(content);
      return;
    }
    int n = content.readableBytes();
    if (n > target.remaining()) {
      throw new IllegalStateException("the server sent more bytes than its Content-Length");
    }
    ByteBuffer part = target.duplicate();
    part.limit(part.position() + n);
    content.readBytes(part);
    if (crc != null) {
      crc.update(part.flip().position(target.position())); // the bytes just copied, still cached
    }
    target.position(part.limit());
  }

  @Override
  public void end() {
    if (status == 200 && encoded != null) {
      complete = true;
    } else if (status == 200) {
      if (target.hasRemaining()) {
        throw new IllegalStateException("the block ended " + target.remaining() + " bytes short");
      }
      if (crc != null && (int) crc.getValue() != expected) {
        throw new DamagedBlockException((int) crc.getValue(), expected);
      }
      if (dst != null) {
        dst.position(target.position());
      }
      complete = true;
    }
  }

  /**
   * Decodes an encoded answer, once complete, into the caller's buffer (moving its position past
   * the block) or a new one; does nothing for an answer that came as it is.
   *
   * @throws CorruptBlockException if the container is damaged, does not decode to the length the
   *     server announced, or (when verifying) to a block with the server's checksum; the caller's
   *     buffer position does not move
   */
  void decode() throws CorruptBlockException {
    if (encoded == null) {
      return;
    }
    ByteBuffer container = encoded.nioBuffer();
    encoded = null;
    long length = BlockCodec.decodedLength(container);
    if (length != decodedLength) {
      throw new CorruptBlockException(CorruptBlockException.Reason.LENGTH_OUT_OF_BOUNDS, -1, 0,
          "the container holds " + length + " bytes, the server announced " + decodedLength);
    }
    target = dst == null ? ByteBuffer.allocateDirect(decodedLength) : dst.duplicate();
    int start = target.position();
    BlockCodec.decode(container, target);
    if (expected != null) {
      int actual = Crc32c.of(target.duplicate().flip().position(start));
      if (actual != expected) {
        throw new CorruptBlockException(CorruptBlockException.Reason.CHECKSUM_MISMATCH, -1, 0,
            new DamagedBlockException(actual, expected).getMessage());
      }
    }
    if (dst != null) {
      dst.position(target.position());
    }
  }

  int status() {
    return status;
  }

  /** The checksum the block's bytes were checked against, once complete; empty if none. */
  OptionalInt checksum() {
    return expected == null ? OptionalInt.empty() : OptionalInt.of(expected);
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
