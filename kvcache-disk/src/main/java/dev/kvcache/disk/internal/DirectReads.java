package dev.kvcache.disk.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * Reads record payloads past the page cache ({@link SuperBlock#readDirect}) into page-aligned
 * buffers from a pool. A payload longer than a {@link #CHUNK_BYTES} chunk is read a chunk at a
 * time, up to {@link #QUEUE_DEPTH} chunks in flight: the caller reads the first itself and IO
 * threads the others, and the caller is handed each chunk, in order, as it arrives, so that it
 * checks (and copies) one chunk while the next are still on their way from the device. The IO
 * threads are daemons, made as needed and ended when idle.
 */
public final class DirectReads implements AutoCloseable {

  /** Bytes per direct read of a long payload. */
  public static final int CHUNK_BYTES = 512 << 10;
  /** Reads of one payload in flight at most. */
  public static final int QUEUE_DEPTH = 4;

  private static final int PAGE = RecordLayout.PAGE;

  private final AlignedBuffers buffers;
  private final ExecutorService io;

  /**
   * @param pooledBytes bytes of buffers kept for the next reads
   * @param name the directory, for the IO threads' names
   */
  public DirectReads(long pooledBytes, String name) {
    this.buffers = new AlignedBuffers(pooledBytes);
    AtomicInteger threads = new AtomicInteger();
    this.io = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "kvcache-disk-read-" + threads.incrementAndGet() + " " + name);
      t.setDaemon(true);
      return t;
    });
  }

  /** A buffer for a payload of {@code length} bytes; give it back with {@link #give}. */
  public ByteBuffer take(int length) {
    return buffers.take(length);
  }

  /** Gives back a buffer from {@link #take}; nothing may use it afterwards. */
  public void give(ByteBuffer buffer) {
    buffers.give(buffer);
  }

  /**
   * Reads the {@code length} bytes at {@code position} (a multiple of the page) of {@code sb},
   * pinned, into {@code buffer} from {@link #take}, whole pages at a time, handing each chunk's
   * bytes of the payload to {@code chunks} in order as it arrives.
   *
   * @return the payload's bytes, a slice of {@code buffer}
   * @throws IOException if a read failed, or the file ended before the payload did; every read
   *     under way has ended by then
   */
  public ByteBuffer read(SuperBlock sb, long position, int length, ByteBuffer buffer,
      Consumer<ByteBuffer> chunks) throws IOException {
    int pages = (int) RecordLayout.alignUp(length, PAGE);
    int count = (pages + CHUNK_BYTES - 1) / CHUNK_BYTES;
    @SuppressWarnings("unchecked")
    CompletableFuture<Void>[] pending = new CompletableFuture[count];
    for (int i = 1; i < Math.min(count, QUEUE_DEPTH); i++) { // and the first, read here
      pending[i] = submit(sb, position, length, pages, buffer, i);
    }
    boolean done = false;
    try {
      for (int i = 0; i < count; i++) {
        if (i == 0) {
          readChunk(sb, position, length, pages, buffer, 0);
        } else {
          await(pending[i]);
        }
        if (i + QUEUE_DEPTH < count) { // one read done: the next goes while this one is used
          pending[i + QUEUE_DEPTH] = submit(sb, position, length, pages, buffer, i + QUEUE_DEPTH);
        }
        int from = i * CHUNK_BYTES;
        chunks.accept(buffer.slice(from, Math.min(CHUNK_BYTES, length - from)));
      }
      done = true;
    } finally {
      if (!done) {
        for (CompletableFuture<Void> p : pending) {
          if (p != null) {
            p.exceptionally(e -> null).join(); // no read may write into the buffer afterwards
          }
        }
      }
    }
    return buffer.slice(0, length);
  }

  /** Runs {@code task} on an IO thread, or here if the threads are shut down. */
  public CompletableFuture<Void> run(Runnable task) {
    try {
      return CompletableFuture.runAsync(task, io);
    } catch (RejectedExecutionException e) {
      task.run();
      return CompletableFuture.completedFuture(null);
    }
  }

  @Override
  public void close() {
    io.shutdown();
  }

  /** Chunk {@code i} read by an IO thread, or here if the threads are shut down. */
  private CompletableFuture<Void> submit(SuperBlock sb, long position, int length, int pages,
      ByteBuffer buffer, int i) throws IOException {
    try {
      return CompletableFuture.runAsync(() -> {
        try {
          readChunk(sb, position, length, pages, buffer, i);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }, io);
    } catch (RejectedExecutionException e) {
      readChunk(sb, position, length, pages, buffer, i);
      return CompletableFuture.completedFuture(null);
    }
  }

  /** Reads chunk {@code i} of the payload's {@code pages} bytes into its place in the buffer. */
  private static void readChunk(SuperBlock sb, long position, int length, int pages,
      ByteBuffer buffer, int i) throws IOException {
    int from = i * CHUNK_BYTES;
    int to = Math.min(pages, from + CHUNK_BYTES);
    int read = sb.readDirect(buffer.slice(from, to - from), position + from);
    int needed = Math.min(length, to) - from;
    if (read < needed) {
      throw new IOException(sb.path() + " ends " + (from + read) + " bytes into the payload at "
          + position + ", of " + length + " bytes");
    }
  }

  private static void await(CompletableFuture<Void> read) throws IOException {
    try {
      read.join();
    } catch (CompletionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof UncheckedIOException io) {
        throw io.getCause();
      }
      throw new IOException("a direct read failed", cause);
    }
  }
}
