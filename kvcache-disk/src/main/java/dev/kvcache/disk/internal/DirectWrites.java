package dev.kvcache.disk.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32C;

/**
 * Writes record payloads past the page cache. A {@link Stream} copies the payload, as it comes,
 * into page-aligned buffers of {@link #CHUNK_BYTES}; each full buffer is written with {@link
 * SuperBlock#writeDirect} by an IO thread while the caller fills the next, up to {@link
 * #QUEUE_DEPTH} writes of a stream in flight. The last buffer is padded with zeros to the
 * alignment: the record owns its last page. The buffers are pooled; the IO threads are daemons,
 * made as needed and ended when idle.
 *
 * <p>A stream opened with a checksum computes the CRC32C of the bytes it copied, piece by piece
 * right after copying each piece ({@link #PIECE_BYTES}), while the piece is still in the CPU's
 * cache: it checks what goes to the device without reading the payload from memory twice.
 *
 * <p>A whole payload already in page-aligned direct memory (a block of the RAM tier, whose blocks
 * start on pages, on its way down) need not be copied: {@link Stream#writeInPlace} writes its
 * whole pages straight from where they are, and copies only the last part page to pad it.
 */
public final class DirectWrites implements AutoCloseable {

  /** Bytes per direct write. */
  public static final int CHUNK_BYTES = 1 << 20;
  /** Writes one stream keeps in flight. */
  public static final int QUEUE_DEPTH = 4;
  /** Bytes copied, then checksummed, at a time: small enough to stay in the CPU's cache. */
  static final int PIECE_BYTES = 64 << 10;
  /** Bytes per direct write from a caller's own memory ({@link Stream#writeInPlace}). */
  static final int IN_PLACE_CHUNK_BYTES = 4 << 20;
  private static final int POOLED_BUFFERS = 16;
  private static final int BUFFER_ALIGNMENT = RecordLayout.PAGE;

  private final Queue<ByteBuffer> pool = new ConcurrentLinkedQueue<>();
  private final ExecutorService io;

  /** @param name the directory, for the IO threads' names */
  public DirectWrites(String name) {
    AtomicInteger threads = new AtomicInteger();
    this.io = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "kvcache-disk-io-" + threads.incrementAndGet() + " " + name);
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * A stream of a payload written from {@code position} (a multiple of the page) of {@code sb};
   * with {@code checksum}, it computes the CRC32C of the bytes it takes ({@link Stream#crc32c}).
   */
  public Stream open(SuperBlock sb, long position, boolean checksum) {
    int alignment = sb.directAlignment();
    if (alignment == 0 || position % BUFFER_ALIGNMENT != 0) {
      throw new IllegalArgumentException("no direct stream at " + position + " of " + sb.path()
          + " (alignment " + alignment + ")");
    }
    return new Stream(sb, position, alignment, checksum ? new CRC32C() : null);
  }

  @Override
  public void close() {
    io.shutdown();
  }

  private ByteBuffer take() {
    ByteBuffer b = pool.poll();
    return b != null ? b.clear()
        : ByteBuffer.allocateDirect(CHUNK_BYTES + BUFFER_ALIGNMENT).alignedSlice(BUFFER_ALIGNMENT)
            .limit(CHUNK_BYTES).slice();
  }

  private void give(ByteBuffer b) {
    if (pool.size() < POOLED_BUFFERS) {
      pool.offer(b);
    }
  }

  /**
   * One payload's bytes on their way to the device. Not thread-safe: one writer feeds it. {@link
   * #finish} or {@link #abandon} ends it.
   */
  public final class Stream {
    private final SuperBlock sb;
    private final int alignment;
    private final Semaphore inFlight = new Semaphore(QUEUE_DEPTH);
    private long position;
    private long written;
    private ByteBuffer filling;
    private volatile IOException failure;
    /** The checksum of the bytes taken so far; null if the stream computes none. */
    private final CRC32C crc;

    private Stream(SuperBlock sb, long position, int alignment, CRC32C crc) {
      this.sb = sb;
      this.position = position;
      this.alignment = alignment;
      this.crc = crc;
    }

    /**
     * The CRC32C of the bytes taken so far, as they went to the device (copied or in place).
     *
     * @throws IllegalStateException if the stream was opened without a checksum
     */
    public int crc32c() {
      if (crc == null) {
        throw new IllegalStateException("the stream computes no checksum");
      }
      return (int) crc.getValue();
    }

    /** Bytes taken so far. */
    public long written() {
      return written;
    }

    /**
     * Takes {@code part}'s remaining bytes as {@link #write} does, but writes its whole pages
     * straight from {@code part}'s memory when it is direct, starts on a page and nothing is
     * buffered before it: no copy. The IO threads read {@code part} until {@link #finish} or
     * {@link #abandon} returns, so its bytes must stay as they are until then.
     */
    public void writeInPlace(ByteBuffer part) throws IOException {
      throwFailure();
      int at = part.position();
      int end = part.limit();
      if (filling == null && part.isDirect()
          && part.alignmentOffset(at, BUFFER_ALIGNMENT) == 0) {
        int pages = (end - at) / BUFFER_ALIGNMENT * BUFFER_ALIGNMENT;
        for (int stop = at + pages; at < stop; ) {
          int n = Math.min(stop - at, IN_PLACE_CHUNK_BYTES);
          ByteBuffer chunk = part.slice(at, n);
          if (crc != null) {
            crc.update(chunk.duplicate());
          }
          at += n;
          written += n;
          submit(chunk, false);
        }
      }
      write(part.duplicate().position(at));
    }

    /** Takes {@code part}'s remaining bytes, leaving its position alone. */
    public void write(ByteBuffer part) throws IOException {
      throwFailure();
      int at = part.position();
      int end = part.limit();
      while (at < end) {
        if (filling == null) {
          filling = take();
        }
        int n = Math.min(end - at, filling.remaining());
        if (crc != null) {
          n = Math.min(n, PIECE_BYTES);
        }
        int from = filling.position();
        filling.put(from, part, at, n);
        if (crc != null) {
          crc.update(filling.slice(from, n));
        }
        filling.position(from + n);
        at += n;
        written += n;
        if (!filling.hasRemaining()) {
          submitFilling();
        }
      }
    }

    /**
     * Writes what is left, padded with zeros to the alignment, and waits for every write.
     *
     * @return the bytes taken, without the padding
     * @throws IOException the first write that failed
     */
    public long finish() throws IOException {
      try {
        if (filling != null && filling.position() > 0) {
          int padded = (int) RecordLayout.alignUp(filling.position(), alignment);
          while (filling.position() < padded) {
            filling.put((byte) 0);
          }
          submitFilling();
        }
      } finally {
        awaitAll();
      }
      throwFailure();
      return written;
    }

    /** Waits for the writes under way and lets the buffers go; what was written stays. */
    public void abandon() {
      awaitAll();
      if (filling != null) {
        give(filling);
        filling = null;
      }
    }

    /** Hands the full buffer to an IO thread, once fewer than the queue depth are in flight. */
    private void submitFilling() throws IOException {
      ByteBuffer b = filling.flip();
      filling = null;
      submit(b, true);
    }

    /**
     * Hands {@code b} to an IO thread, once fewer than the queue depth are in flight; {@code
     * pooled}: it is one of the stream's buffers, returned to the pool once written.
     */
    private void submit(ByteBuffer b, boolean pooled) throws IOException {
      long at = position;
      position += b.remaining();
      inFlight.acquireUninterruptibly();
      try {
        io.execute(() -> {
          try {
            if (failure == null) {
              sb.writeDirect(b, at);
            }
          } catch (IOException e) {
            failure = e;
          } catch (RuntimeException e) {
            failure = new IOException("direct write at " + at + " of " + sb.path() + " failed", e);
          } finally {
            if (pooled) {
              give(b);
            }
            inFlight.release();
          }
        });
      } catch (RejectedExecutionException e) {
        inFlight.release();
        if (pooled) {
          give(b);
        }
        throw new IOException("the disk tier is closed", e);
      }
    }

    /** Returns once no write of this stream is in flight. */
    private void awaitAll() {
      inFlight.acquireUninterruptibly(QUEUE_DEPTH);
      inFlight.release(QUEUE_DEPTH);
    }

    private void throwFailure() throws IOException {
      IOException f = failure;
      if (f != null) {
        throw new IOException(f.getMessage(), f);
      }
    }
  }
}
