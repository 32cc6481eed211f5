package dev.kvcache.disk.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Writes a payload that arrives in parts (16 KiB HTTP/2 frames, say) to a {@link
 * PositionedChannel}, gathering small parts into writes of {@link #GATHER_BYTES}: one positional
 * write per part would cost a system call each, which on a disk file system takes as long as
 * copying the part. A part at least that large, arriving with nothing gathered, is written as it
 * is. The gathering buffers are direct and pooled.
 */
public final class PartWriter {

  /** Bytes gathered before they are written. */
  public static final int GATHER_BYTES = 256 << 10;
  private static final int POOLED_BUFFERS = 8;
  private static final Queue<ByteBuffer> POOL = new ConcurrentLinkedQueue<>();

  private final PositionedChannel out;
  private ByteBuffer gathered;

  public PartWriter(PositionedChannel out) {
    this.out = out;
  }

  /** Takes {@code part}'s remaining bytes, leaving its position alone. */
  public void write(ByteBuffer part) throws IOException {
    int at = part.position();
    int end = part.limit();
    if ((gathered == null || gathered.position() == 0) && end - at >= GATHER_BYTES) {
      out.write(part.duplicate());
      return;
    }
    if (gathered == null) {
      gathered = POOL.poll();
      gathered = gathered == null ? ByteBuffer.allocateDirect(GATHER_BYTES) : gathered.clear();
    }
    while (at < end) {
      int n = Math.min(end - at, gathered.remaining());
      gathered.put(gathered.position(), part, at, n);
      gathered.position(gathered.position() + n);
      at += n;
      if (!gathered.hasRemaining()) {
        flush();
      }
    }
  }

  /** Writes what is gathered. */
  public void flush() throws IOException {
    if (gathered != null && gathered.position() > 0) {
      out.write(gathered.flip());
      gathered.clear();
    }
  }

  /** Gives the gathering buffer back to the pool, dropping what it holds. */
  public void close() {
    if (gathered != null && POOL.size() < POOLED_BUFFERS) {
      POOL.offer(gathered);
    }
    gathered = null;
  }
}
