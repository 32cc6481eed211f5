package dev.kvcache.codec;

import static dev.kvcache.internal.codec.ContainerLayout.*;

import dev.kvcache.codec.CorruptBlockException.Reason;
import dev.kvcache.internal.codec.FilterKernels;
import dev.kvcache.internal.codec.SharedWork;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channel;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SelectableChannel;
import java.nio.channels.WritableByteChannel;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.zip.CRC32C;
import net.jpountz.lz4.LZ4Compressor;
import net.jpountz.lz4.LZ4Exception;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.lz4.LZ4SafeDecompressor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Encodes KV blocks into a chunked, checksummed LZ4 container and decodes them back; the format
 * is specified in {@code docs/codec-format.md}.
 *
 * <p>The payload is cut into chunks of {@link #chunkSizeBytes()} that are filtered (optionally
 * byte-shuffled), compressed and checksummed independently, so memory stays bounded by one chunk,
 * decoding can start before the whole payload has arrived, and a damaged chunk is detected and
 * named. A chunk that LZ4 does not shrink by at least {@link #minSavingsPercent()} percent is
 * stored raw, so incompressible data grows only by the headers (32 bytes plus 16 per chunk).
 * Chunks of 64 KiB and more are first probed: if none of the samples spread evenly over the chunk
 * (an eighth of it in all), filtered and compressed alone, shrinks at all, the chunk is stored raw
 * without compressing the rest, so random or already-compressed data costs little more than a
 * copy.
 *
 * <p>By default everything runs on the calling thread. With {@link Builder#executor} a buffer is
 * encoded several chunks at a time, and {@link #decode(ByteBuffer, ByteBuffer, Executor, int)}
 * decodes several chunks at a time straight into their places; either way extra memory is bounded
 * by one chunk per thread, never by the payload. Channel encoding and decoding are sequential.
 * For bytes that arrive in parts, such as a network body, {@link #encoder} and {@link #decoder}
 * encode or decode each chunk as soon as its bytes are in.
 *
 * <p>Encoding needs the codec's settings; decoding does not, since the container records them.
 * Instances are immutable and thread-safe. The fastest LZ4 implementation available is used (the
 * native one when its library loads, else pure Java; which one is logged once); decompression
 * always uses lz4-java's safe decompressor, which never reads or writes out of bounds on malformed
 * input.
 *
 * <pre>{@code
 * BlockCodec codec = BlockCodec.builder().filter(Filter.BYTE_SHUFFLE_2).build();
 * ByteBuffer encoded = ByteBuffer.allocateDirect((int) codec.maxEncodedLength(block.remaining()));
 * codec.encode(block, encoded);
 * ByteBuffer decoded = ByteBuffer.allocateDirect((int) BlockCodec.decodedLength(encoded.flip()));
 * BlockCodec.decode(encoded, decoded);
 * }</pre>
 */
public final class BlockCodec {

  private static final Logger log = LoggerFactory.getLogger(BlockCodec.class);

  /** Default chunk size: 256 KiB. */
  public static final int DEFAULT_CHUNK_BYTES = 256 << 10;

  /** Default margin: a chunk must shrink by at least 2% to be stored compressed. */
  public static final int DEFAULT_MIN_SAVINGS_PERCENT = 2;

  /** Length of the container's header, all {@link #decodedLength} needs to read. */
  public static final int CONTAINER_HEADER_BYTES = HEADER_BYTES;

  private static final LZ4Factory LZ4 = loadLz4();
  private static final LZ4SafeDecompressor DECOMPRESSOR = LZ4.safeDecompressor();
  private static final LZ4Compressor LZ4_BOUND = LZ4.fastCompressor();
  private static final ThreadLocal<FilterBuffers> SCRATCH = new ThreadLocal<>();
  /** Chunks up to this size keep their buffers in the pool. */
  private static final int MAX_POOLED_CHUNK_BYTES = 4 << 20;
  private static final int MAX_CACHED_SCRATCH_BYTES = 4 << 20;
  /** Chunks this large are probed with samples before compressing. */
  private static final int MIN_PROBED_CHUNK_BYTES = 64 << 10;
  private static final int MIN_PROBE_BYTES = 8 << 10;
  /** Chunk buffer pairs kept for channel encoding and decoding, encoders and decoders. */
  private static final int POOLED_CHUNK_BUFFERS = 8;
  private static final Queue<ChunkBuffers> CHUNK_BUFFERS = new ConcurrentLinkedQueue<>();

  private final int chunkSizeBytes;
  private final Filter filter;
  private final int minSavingsPercent;
  private final LZ4Compressor compressor = LZ4.fastCompressor();
  private final Executor executor;
  private final int threads;

  private BlockCodec(Builder builder) {
    this.chunkSizeBytes = builder.chunkSizeBytes;
    this.filter = builder.filter;
    this.minSavingsPercent = builder.minSavingsPercent;
    this.executor = builder.executor;
    this.threads = builder.threads;
  }

  private static LZ4Factory loadLz4() {
    LZ4Factory factory = LZ4Factory.fastestInstance();
    log.info("LZ4 implementation: {}", factory);
    return factory;
  }

  /** A builder with the defaults: 256 KiB chunks, no filter, 2% minimum savings. */
  public static Builder builder() {
    return new Builder();
  }

  public int chunkSizeBytes() {
    return chunkSizeBytes;
  }

  public Filter filter() {
    return filter;
  }

  public int minSavingsPercent() {
    return minSavingsPercent;
  }

  /**
   * The most bytes {@link #encode} can produce for {@code rawLength} bytes of input: the payload
   * plus the headers, since a chunk that would not shrink is stored raw.
   */
  public long maxEncodedLength(long rawLength) {
    if (rawLength < 0) {
      throw new IllegalArgumentException("negative length " + rawLength);
    }
    return HEADER_BYTES + chunkCount(rawLength, chunkSizeBytes) * CHUNK_HEADER_BYTES + rawLength;
  }

  /**
   * The most bytes a container of {@code rawLength} bytes can take, whatever chunk size its encoder
   * used (the smallest chunks have the most headers): the bound on a container from elsewhere.
   */
  public static long maxContainerLength(long rawLength) {
    if (rawLength < 0) {
      throw new IllegalArgumentException("negative length " + rawLength);
    }
    return HEADER_BYTES + chunkCount(rawLength, MIN_CHUNK_BYTES) * CHUNK_HEADER_BYTES + rawLength;
  }

  /**
   * Encodes {@code src}'s remaining bytes into {@code dst} at its position, advancing it; {@code
   * src}'s position is not changed.
   *
   * @return the number of bytes written
   * @throws IllegalArgumentException if {@code dst} has less than {@link #maxEncodedLength}
   *     remaining
   */
  public int encode(ByteBuffer src, ByteBuffer dst) {
    Objects.requireNonNull(src, "src");
    Objects.requireNonNull(dst, "dst");
    int rawLength = src.remaining();
    requireRoom(rawLength, dst);
    int start = dst.position();
    writeHeader(dst, start, rawLength);
    int out = start + HEADER_BYTES;
    if (threads > 1 && rawLength > chunkSizeBytes) {
      out = encodeInParallel(src, dst, out);
    } else {
      FilterBuffers scratch = filter == Filter.NONE ? null : filterBuffers(chunkSizeBytes);
      CRC32C crc = new CRC32C();
      for (int in = src.position(), end = src.limit(); in < end; ) {
        int len = Math.min(chunkSizeBytes, end - in);
        out += encodeChunk(src, in, len, dst, out, scratch, crc);
        in += len;
      }
    }
    dst.position(out);
    return out - start;
  }

  /**
   * Encodes every chunk straight into its slot in {@code dst}, the place it would take if every
   * chunk before it were stored raw (chunks are shared among the threads as they free up), then
   * slides the chunks down in order to close the gaps. No extra buffer beyond the filter's.
   */
  private int encodeInParallel(ByteBuffer src, ByteBuffer dst, int start) {
    int first = src.position();
    int end = src.limit();
    int chunks = (int) chunkCount(end - first, chunkSizeBytes);
    int slot = CHUNK_HEADER_BYTES + chunkSizeBytes;
    int[] sizes = new int[chunks];
    SharedWork.run(executor, threads - 1, chunks, i -> {
      int in = first + i * chunkSizeBytes;
      int len = Math.min(chunkSizeBytes, end - in);
      FilterBuffers scratch = filter == Filter.NONE ? null : filterBuffers(chunkSizeBytes);
      sizes[i] = encodeChunk(src, in, len, dst, start + i * slot, scratch, new CRC32C());
    });
    int out = start;
    for (int i = 0; i < chunks; i++) {
      int at = start + i * slot;
      if (at != out) {
        dst.put(out, dst, at, sizes[i]); // a move to a lower offset: overlapping is fine
      }
      out += sizes[i];
    }
    return out;
  }

  /**
   * Encodes {@code src}'s remaining bytes to {@code out} (a blocking channel), one chunk at a time,
   * holding at most one encoded chunk in memory; {@code src}'s position is not changed.
   *
   * @return the number of bytes written
   */
  public long encode(ByteBuffer src, WritableByteChannel out) throws IOException {
    Objects.requireNonNull(src, "src");
    Objects.requireNonNull(out, "out");
    requireBlocking(out);
    int rawLength = src.remaining();
    ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES);
    writeHeader(header, 0, rawLength);
    long written = writeFully(out, header);
    ChunkBuffers buffers = takeChunkBuffers(largestChunk(rawLength));
    try {
      ByteBuffer chunk = buffers.encoded;
      FilterBuffers scratch = filter == Filter.NONE ? null : filterBuffers(chunkSizeBytes);
      CRC32C crc = new CRC32C();
      for (int in = src.position(), end = src.limit(); in < end; ) {
        int len = Math.min(chunkSizeBytes, end - in);
        int size = encodeChunk(src, in, len, chunk, 0, scratch, crc);
        written += writeFully(out, chunk.clear().limit(size));
        in += len;
      }
      return written;
    } finally {
      giveBack(buffers);
    }
  }

  /**
   * Encodes exactly {@code rawLength} bytes read from {@code in} (a blocking channel; wrap an
   * {@code InputStream} with {@link java.nio.channels.Channels#newChannel}) to {@code out}, one
   * chunk at a time: memory is one raw and one encoded chunk, whatever the length. The length must
   * be known up front, since the header records it.
   *
   * @return the number of bytes written
   * @throws EOFException if {@code in} ends before {@code rawLength} bytes (what was written to
   *     {@code out} by then is not a complete container)
   */
  public long encode(ReadableByteChannel in, long rawLength, WritableByteChannel out)
      throws IOException {
    Objects.requireNonNull(in, "in");
    Objects.requireNonNull(out, "out");
    requireBlocking(in);
    requireBlocking(out);
    requireBlockLength(rawLength);
    ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES);
    writeHeader(header, 0, rawLength);
    long written = writeFully(out, header);
    ChunkBuffers buffers = takeChunkBuffers(largestChunk(rawLength));
    try {
      FilterBuffers scratch = filter == Filter.NONE ? null : filterBuffers(chunkSizeBytes);
      CRC32C crc = new CRC32C();
      for (long done = 0; done < rawLength; ) {
        int len = readChunk(in, buffers.raw, done, rawLength);
        int size = encodeChunk(buffers.raw, 0, len, buffers.encoded, 0, scratch, crc);
        written += writeFully(out, buffers.encoded.clear().limit(size));
        done += len;
      }
      return written;
    } finally {
      giveBack(buffers);
    }
  }

  /**
   * Encodes exactly {@code rawLength} bytes read from {@code in} (a blocking channel) into {@code
   * dst} at its position, advancing it; each chunk is encoded straight into its place, so memory is
   * one raw chunk. On failure {@code dst}'s position is unchanged and the bytes after it are
   * unspecified.
   *
   * @return the number of bytes written
   * @throws IllegalArgumentException if {@code dst} has less than {@link #maxEncodedLength}
   *     remaining
   * @throws EOFException if {@code in} ends before {@code rawLength} bytes
   */
  public int encode(ReadableByteChannel in, long rawLength, ByteBuffer dst) throws IOException {
    Objects.requireNonNull(in, "in");
    Objects.requireNonNull(dst, "dst");
    requireBlocking(in);
    requireBlockLength(rawLength);
    requireRoom(rawLength, dst);
    int start = dst.position();
    writeHeader(dst, start, rawLength);
    int out = start + HEADER_BYTES;
    ChunkBuffers buffers = takeChunkBuffers(largestChunk(rawLength));
    try {
      FilterBuffers scratch = filter == Filter.NONE ? null : filterBuffers(chunkSizeBytes);
      CRC32C crc = new CRC32C();
      for (long done = 0; done < rawLength; ) {
        int len = readChunk(in, buffers.raw, done, rawLength);
        out += encodeChunk(buffers.raw, 0, len, dst, out, scratch, crc);
        done += len;
      }
    } finally {
      giveBack(buffers);
    }
    dst.position(out);
    return out - start;
  }

  /**
   * Opens an encoder for a block of exactly {@code rawLength} bytes that arrive in parts, writing
   * the container to {@code out} (a blocking channel) chunk by chunk; see {@link BlockEncoder}.
   * The container's header is written now. The length must be known up front, since the header
   * records it.
   *
   * @throws IOException if writing the header fails
   */
  public BlockEncoder encoder(long rawLength, WritableByteChannel out) throws IOException {
    Objects.requireNonNull(out, "out");
    requireBlocking(out);
    requireBlockLength(rawLength);
    return new BlockEncoder(this, rawLength, out);
  }

  /** Reads the next chunk (after {@code done} of {@code rawLength} bytes) into {@code chunk}. */
  private int readChunk(ReadableByteChannel in, ByteBuffer chunk, long done, long rawLength)
      throws IOException {
    int len = (int) Math.min(chunkSizeBytes, rawLength - done);
    chunk.clear().limit(len);
    while (chunk.hasRemaining()) {
      if (in.read(chunk) < 0) {
        throw new EOFException(
            "the stream ended after " + (done + chunk.position()) + " of " + rawLength + " bytes");
      }
    }
    return len;
  }

  private int largestChunk(long rawLength) {
    return (int) Math.min(chunkSizeBytes, rawLength);
  }

  private static void requireBlockLength(long rawLength) {
    if (rawLength < 0 || rawLength > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("a block is 0 to 2^31 - 1 bytes, got " + rawLength);
    }
  }

  private void requireRoom(long rawLength, ByteBuffer dst) {
    long max = maxEncodedLength(rawLength);
    if (dst.remaining() < max) {
      throw new IllegalArgumentException(
          "destination has " + dst.remaining() + " bytes remaining, encoding " + rawLength
              + " bytes may take " + max);
    }
  }

  void writeHeader(ByteBuffer dst, int at, long rawLength) {
    ByteBuffer h = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    h.putInt(at + MAGIC_OFFSET, MAGIC);
    h.put(at + VERSION_OFFSET, (byte) VERSION);
    h.put(at + FILTER_OFFSET, (byte) filter.formatId());
    h.put(at + ELEMENT_SIZE_OFFSET, (byte) filter.elementSizeBytes());
    h.put(at + FLAGS_OFFSET, (byte) 0);
    h.putInt(at + CHUNK_SIZE_OFFSET, chunkSizeBytes);
    h.putInt(at + CHUNK_COUNT_OFFSET, (int) chunkCount(rawLength, chunkSizeBytes));
    h.putLong(at + RAW_LENGTH_OFFSET, rawLength);
    h.putInt(at + HEADER_RESERVED_OFFSET, 0);
    CRC32C crc = new CRC32C();
    crc.update(dst.slice(at, HEADER_CRC_OFFSET));
    h.putInt(at + HEADER_CRC_OFFSET, (int) crc.getValue());
  }

  /**
   * Writes one chunk (header and payload) at {@code out} in {@code dst}, through this thread's
   * filter buffers; returns its size.
   */
  int encodeChunk(ByteBuffer src, int in, int len, ByteBuffer dst, int out, CRC32C crc) {
    FilterBuffers scratch = filter == Filter.NONE ? null : filterBuffers(chunkSizeBytes);
    return encodeChunk(src, in, len, dst, out, scratch, crc);
  }

  /** Writes one chunk (header and payload) at {@code out} in {@code dst}; returns its size. */
  private int encodeChunk(
      ByteBuffer src, int in, int len, ByteBuffer dst, int out, FilterBuffers scratch, CRC32C crc) {
    int payload = out + CHUNK_HEADER_BYTES;
    int limit = len - (int) ((long) len * minSavingsPercent / 100);
    int stored = -1;
    try {
      if (len >= MIN_PROBED_CHUNK_BYTES && looksIncompressible(src, in, len, dst, payload, scratch)) {
        stored = -1; // skip filtering and compressing the rest
      } else if (scratch == null) {
        stored = compressor.compress(src, in, len, dst, payload, limit);
      } else {
        src.get(in, scratch.plain, 0, len);
        stored = compressor.compress(applyFilter(filter, scratch, len), 0, len, dst, payload, limit);
      }
    } catch (LZ4Exception e) {
      stored = -1; // LZ4 gave up at the limit: store raw
    }
    int mode = MODE_LZ4;
    if (stored < 0) {
      dst.put(payload, src, in, len);
      stored = len;
      mode = MODE_RAW;
    }
    ByteBuffer h = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    h.putInt(out + CHUNK_RAW_LENGTH_OFFSET, len);
    h.putInt(out + CHUNK_STORED_LENGTH_OFFSET, stored);
    h.put(out + CHUNK_MODE_OFFSET, (byte) mode);
    h.put(out + CHUNK_RESERVED_OFFSET, (byte) 0);
    h.put(out + CHUNK_RESERVED_OFFSET + 1, (byte) 0);
    h.put(out + CHUNK_RESERVED_OFFSET + 2, (byte) 0);
    crc.reset();
    crc.update(dst.slice(out, CHUNK_CRC_OFFSET));
    crc.update(src.slice(in, len));
    h.putInt(out + CHUNK_CRC_OFFSET, (int) crc.getValue());
    return CHUNK_HEADER_BYTES + stored;
  }

  /**
   * Whether LZ4 cannot shrink any of the samples spread evenly over the chunk at {@code in} (an
   * eighth of it in all, in samples of at least 8 KiB so that repeats some kilobytes apart show),
   * each filtered and compressed on its own into {@code dst} at {@code at} (space the chunk's
   * payload overwrites later). Random or already-compressed data is caught this way at an eighth of
   * the chunk's work; data that compresses anywhere a sample falls is compressed whole.
   */
  private boolean looksIncompressible(
      ByteBuffer src, int in, int len, ByteBuffer dst, int at, FilterBuffers scratch) {
    int sample = Math.max(MIN_PROBE_BYTES, len / 128);
    int samples = Math.max(1, len / 8 / sample);
    for (int p = 0; p < samples; p++) {
      int from = in + (int) ((long) p * len / samples);
      try {
        if (scratch == null) {
          compressor.compress(src, from, sample, dst, at, sample - 1);
        } else {
          src.get(from, scratch.plain, 0, sample);
          compressor.compress(applyFilter(filter, scratch, sample), 0, sample, dst, at, sample - 1);
        }
        return false; // this sample shrank
      } catch (LZ4Exception e) {
        // did not fit in fewer bytes than it has: try the next
      }
    }
    return true;
  }

  private static void requireBlocking(Channel channel) {
    if (channel instanceof SelectableChannel && !((SelectableChannel) channel).isBlocking()) {
      throw new IllegalArgumentException("the channel must be in blocking mode");
    }
  }

  static long writeFully(WritableByteChannel out, ByteBuffer b) throws IOException {
    long n = 0;
    while (b.hasRemaining()) {
      n += out.write(b);
    }
    return n;
  }

  /**
   * The decoded size of the container starting at {@code encoded}'s position, from its header
   * alone (the first 32 bytes).
   *
   * @throws CorruptBlockException if the header is missing, truncated or invalid
   */
  public static long decodedLength(ByteBuffer encoded) throws CorruptBlockException {
    return Header.read(encoded, encoded.position()).rawLength;
  }

  /**
   * Decodes the container at {@code src}'s position into {@code dst} at its position. On success
   * both positions advance past what was read and written; on failure neither moves.
   *
   * @throws CorruptBlockException if the container is truncated, malformed or fails a checksum
   * @throws IllegalArgumentException if {@code dst} has fewer bytes remaining than the decoded size
   */
  public static void decode(ByteBuffer src, ByteBuffer dst) throws CorruptBlockException {
    decode(src, dst, Runnable::run, 1);
  }

  /**
   * Like {@link #decode(ByteBuffer, ByteBuffer)}, decoding up to {@code threads} chunks at a time:
   * the calling thread plus {@code threads - 1} tasks on {@code executor}. Each chunk is decoded
   * straight into its place in {@code dst}; extra memory is one chunk per thread when a filter is
   * used, none otherwise.
   */
  public static void decode(ByteBuffer src, ByteBuffer dst, Executor executor, int threads)
      throws CorruptBlockException {
    Objects.requireNonNull(src, "src");
    Objects.requireNonNull(dst, "dst");
    Objects.requireNonNull(executor, "executor");
    if (threads < 1) {
      throw new IllegalArgumentException("threads must be at least 1, got " + threads);
    }
    int base = src.position();
    Header header = Header.read(src, base);
    if (src.limit() - base - HEADER_BYTES < (long) CHUNK_HEADER_BYTES * header.chunkCount) {
      throw new CorruptBlockException(Reason.TRUNCATED, -1, 0,
          header.chunkCount + " chunks cannot fit in the " + (src.limit() - base) + " bytes present");
    }
    header.requireRoom(dst);
    int out = dst.position();
    ChunkDecoder decoder = new ChunkDecoder(header);
    int[] chunkAt = new int[header.chunkCount];
    int[] storedAt = threads > 1 ? new int[header.chunkCount] : null;
    int in = base + HEADER_BYTES;
    for (int i = 0; i < header.chunkCount; i++) {
      if (src.limit() - in < CHUNK_HEADER_BYTES) {
        throw new CorruptBlockException(Reason.TRUNCATED, i, in - base,
            "the stream ends " + (src.limit() - in) + " bytes into a 16-byte chunk header");
      }
      int stored = decoder.readChunkHeader(src, in, i, in - base);
      if (src.limit() - in - CHUNK_HEADER_BYTES < stored) {
        throw new CorruptBlockException(Reason.TRUNCATED, i, in - base,
            "the chunk holds " + stored + " bytes but the stream ends after "
                + (src.limit() - in - CHUNK_HEADER_BYTES));
      }
      if (threads == 1) {
        decoder.decodeChunk(src, in, dst, out + i * header.chunkSize, i, in - base);
      }
      chunkAt[i] = in;
      if (storedAt != null) {
        storedAt[i] = stored;
      }
      in += CHUNK_HEADER_BYTES + stored;
    }
    if (threads > 1) {
      decodeInParallel(header, src, base, chunkAt, storedAt, dst, out, executor, threads);
    }
    src.position(in);
    dst.position(out + (int) header.rawLength);
  }

  private static void decodeInParallel(Header header, ByteBuffer src, int base, int[] chunkAt,
      int[] storedAt, ByteBuffer dst, int out, Executor executor, int threads)
      throws CorruptBlockException {
    AtomicReference<CorruptBlockException> failure = new AtomicReference<>();
    ThreadLocal<ChunkDecoder> decoders = ThreadLocal.withInitial(() -> new ChunkDecoder(header));
    SharedWork.run(executor, threads - 1, chunkAt.length, i -> {
      if (failure.get() != null) {
        return;
      }
      ChunkDecoder decoder = decoders.get();
      long offset = chunkAt[i] - base;
      try {
        if (decoder.readChunkHeader(src, chunkAt[i], i, offset) != storedAt[i]) {
          throw new CorruptBlockException(Reason.LENGTH_OUT_OF_BOUNDS, i, offset,
              "the chunk header changed while the block was being decoded");
        }
        decoder.decodeChunk(src, chunkAt[i], dst, out + i * header.chunkSize, i, offset);
      } catch (CorruptBlockException e) {
        failure.compareAndSet(null, e);
      }
    });
    if (failure.get() != null) {
      throw failure.get();
    }
  }

  /**
   * Decodes a container read from {@code in} (a blocking channel) into {@code dst} at its
   * position, one chunk at a time, holding at most one encoded chunk in memory; reads exactly the
   * container's bytes.
   *
   * @throws CorruptBlockException if the container is truncated, malformed or fails a checksum
   * @throws IllegalArgumentException if {@code dst} has fewer bytes remaining than the decoded size
   */
  public static void decode(ReadableByteChannel in, ByteBuffer dst) throws IOException {
    Objects.requireNonNull(in, "in");
    Objects.requireNonNull(dst, "dst");
    int[] out = {dst.position()};
    readChunks(in, header -> header.requireRoom(dst),
        (decoder, chunk, spare, i, offset) ->
            out[0] += decoder.decodeChunk(chunk, 0, dst, out[0], i, offset));
    dst.position(out[0]);
  }

  /**
   * Decodes a container read from {@code in} (a blocking channel) to {@code out}, one chunk at a
   * time: each chunk is decoded into a buffer of one chunk and written to {@code out} once it has
   * passed its checksum, so memory is one encoded and one decoded chunk, whatever the length. Reads
   * exactly the container's bytes. For a destination that takes bytes piece by piece, such as a
   * {@link dev.kvcache.BlockWriter} opened with {@link #decodedLength}.
   *
   * @return the number of bytes written to {@code out}, the container's decoded length
   * @throws CorruptBlockException if the container is truncated, malformed or fails a checksum;
   *     the chunks before the damaged one have been written by then
   */
  public static long decode(ReadableByteChannel in, WritableByteChannel out) throws IOException {
    Objects.requireNonNull(in, "in");
    Objects.requireNonNull(out, "out");
    requireBlocking(out);
    long[] written = {0};
    readChunks(in, header -> { }, (decoder, chunk, spare, i, offset) -> {
      int decoded = decoder.decodeChunk(chunk, 0, spare.clear(), 0, i, offset);
      written[0] += writeFully(out, spare.limit(decoded));
    });
    return written[0];
  }

  /**
   * Opens a decoder for a container whose bytes arrive in parts, handing each decoded chunk to
   * {@code sink} as soon as it is complete and checked; see {@link BlockDecoder}.
   */
  public static BlockDecoder decoder(BlockDecoder.Sink sink) {
    return new BlockDecoder(sink);
  }

  /** What is done with each chunk {@link #readChunks} has read and checked the header of. */
  private interface ChunkSink {
    /**
     * @param chunk the chunk, header included, at position 0
     * @param spare a buffer at least one decoded chunk long, free for the sink's use
     */
    void accept(ChunkDecoder decoder, ByteBuffer chunk, ByteBuffer spare, int index, long offset)
        throws IOException;
  }

  /**
   * Reads a container from {@code in} (a blocking channel) one chunk at a time, exactly its bytes,
   * holding one encoded chunk in memory: hands the header to {@code onHeader}, then each chunk to
   * {@code sink}.
   */
  private static void readChunks(ReadableByteChannel in, Consumer<Header> onHeader,
      ChunkSink sink) throws IOException {
    requireBlocking(in);
    ByteBuffer headerBytes = ByteBuffer.allocate(HEADER_BYTES);
    readFully(in, headerBytes, -1, 0);
    Header header = Header.read(headerBytes.flip(), 0);
    onHeader.accept(header);
    ChunkDecoder decoder = new ChunkDecoder(header);
    ChunkBuffers buffers = takeChunkBuffers(header.largestChunk());
    long offset = HEADER_BYTES;
    try {
      ByteBuffer chunk = buffers.encoded;
      for (int i = 0; i < header.chunkCount; i++) {
        chunk.clear().limit(CHUNK_HEADER_BYTES);
        readFully(in, chunk, i, offset);
        int stored = decoder.readChunkHeader(chunk, 0, i, offset);
        chunk.limit(CHUNK_HEADER_BYTES + stored);
        readFully(in, chunk, i, offset);
        sink.accept(decoder, chunk, buffers.raw, i, offset);
        offset += CHUNK_HEADER_BYTES + stored;
      }
    } finally {
      giveBack(buffers);
    }
  }

  /** LZ4's worst-case output for {@code rawLength} input bytes. */
  static int maxLz4Length(int rawLength) {
    return LZ4_BOUND.maxCompressedLength(rawLength);
  }

  private static void readFully(ReadableByteChannel in, ByteBuffer b, int chunk, long offset)
      throws IOException {
    while (b.hasRemaining()) {
      if (in.read(b) < 0) {
        throw new CorruptBlockException(Reason.TRUNCATED, chunk, offset,
            "the stream ended " + b.remaining() + " bytes early");
      }
    }
  }

  /**
   * This thread's filter buffers, at least {@code bytes} long, reused across calls for chunks up
   * to 4 MiB, so extra memory is bounded by (threads using the codec) x 8 MiB; larger chunks get
   * buffers of their own per call.
   */
  private static FilterBuffers filterBuffers(int bytes) {
    if (bytes > MAX_CACHED_SCRATCH_BYTES) {
      return new FilterBuffers(bytes); // rare chunk sizes are not kept per thread
    }
    FilterBuffers b = SCRATCH.get();
    if (b == null || b.plain.length < bytes) {
      b = new FilterBuffers(bytes);
      SCRATCH.set(b);
    }
    return b;
  }

  /**
   * A raw and an encoded chunk buffer for chunks of up to {@code rawBytes}, for channel encoding
   * and decoding, a {@link BlockEncoder} or a {@link BlockDecoder}: from a pool shared by all
   * codecs (an encoder or decoder may be fed and closed on different threads, so not per thread),
   * or new if none there fits, so that a put through a channel usually allocates no direct memory.
   * The pool keeps at most {@link #POOLED_CHUNK_BUFFERS} pairs, none for chunks over 4 MiB. Give
   * them back with {@link #giveBack}.
   */
  static ChunkBuffers takeChunkBuffers(int rawBytes) {
    ChunkBuffers pooled = CHUNK_BUFFERS.poll();
    if (pooled != null) {
      if (pooled.fits(rawBytes)) {
        pooled.raw.clear();
        pooled.encoded.clear();
        return pooled;
      }
      CHUNK_BUFFERS.offer(pooled);
    }
    return new ChunkBuffers(Math.max(rawBytes, DEFAULT_CHUNK_BYTES));
  }

  static void giveBack(ChunkBuffers buffers) {
    if (buffers.raw.capacity() <= MAX_POOLED_CHUNK_BYTES
        && CHUNK_BUFFERS.size() < POOLED_CHUNK_BUFFERS) {
      CHUNK_BUFFERS.offer(buffers);
    }
  }

  /** Direct buffers for one chunk at a time: its raw bytes, and its encoded form with its header. */
  static final class ChunkBuffers {
    final ByteBuffer raw;
    final ByteBuffer encoded;

    ChunkBuffers(int rawBytes) {
      raw = ByteBuffer.allocateDirect(rawBytes);
      encoded = ByteBuffer.allocateDirect(CHUNK_HEADER_BYTES + maxLz4Length(rawBytes));
    }

    boolean fits(int rawBytes) {
      return raw.capacity() >= rawBytes;
    }
  }

  /** A chunk's bytes before and after the filter, as heap arrays the filters work on. */
  private static final class FilterBuffers {
    final byte[] plain;
    final byte[] filtered;
    final ByteBuffer plainView;
    final ByteBuffer filteredView;

    FilterBuffers(int bytes) {
      plain = new byte[bytes];
      filtered = new byte[bytes];
      plainView = ByteBuffer.wrap(plain);
      filteredView = ByteBuffer.wrap(filtered);
    }
  }

  /**
   * Filters the chunk of {@code len} bytes held in {@code s.plain} (which may be overwritten);
   * returns a view of the filtered bytes.
   */
  private static ByteBuffer applyFilter(Filter filter, FilterBuffers s, int len) {
    return FilterKernels.apply(filter, s.plain, len, s.filtered) == s.plain ? s.plainView : s.filteredView;
  }

  /**
   * Reverses the filter on the chunk of {@code len} bytes held in {@code s.filtered} (which may be
   * overwritten); returns the array holding the chunk's bytes.
   */
  private static byte[] removeFilter(Filter filter, FilterBuffers s, int len) {
    return FilterKernels.remove(filter, s.filtered, len, s.plain);
  }

  static long chunkCount(long rawLength, int chunkSize) {
    return (rawLength + chunkSize - 1) / chunkSize;
  }

  /** The validated container header. */
  static final class Header {
    final Filter filter;
    final int chunkSize;
    final int chunkCount;
    final long rawLength;

    private Header(Filter filter, int chunkSize, int chunkCount, long rawLength) {
      this.filter = filter;
      this.chunkSize = chunkSize;
      this.chunkCount = chunkCount;
      this.rawLength = rawLength;
    }

    static Header read(ByteBuffer src, int at) throws CorruptBlockException {
      if (src.limit() - at < HEADER_BYTES) {
        throw new CorruptBlockException(Reason.TRUNCATED, -1, 0,
            "a container starts with a 32-byte header, only " + Math.max(0, src.limit() - at)
                + " bytes are present");
      }
      ByteBuffer h = src.duplicate().order(ByteOrder.LITTLE_ENDIAN);
      int magic = h.getInt(at + MAGIC_OFFSET);
      if (magic != MAGIC) {
        throw new CorruptBlockException(Reason.BAD_MAGIC, -1, 0,
            String.format("expected magic 0x%08x ('kvcz'), found 0x%08x", MAGIC, magic));
      }
      int version = h.get(at + VERSION_OFFSET) & 0xff;
      if (version != VERSION) {
        throw new CorruptBlockException(Reason.UNSUPPORTED_VERSION, -1, VERSION_OFFSET,
            "format version " + version + "; this reader knows version " + VERSION
                + (version > VERSION ? " (written by a newer kvcache)" : ""));
      }
      CRC32C crc = new CRC32C();
      crc.update(src.slice(at, HEADER_CRC_OFFSET));
      int expected = h.getInt(at + HEADER_CRC_OFFSET);
      if ((int) crc.getValue() != expected) {
        throw new CorruptBlockException(Reason.CHECKSUM_MISMATCH, -1, HEADER_CRC_OFFSET,
            String.format("header checksum 0x%08x, computed 0x%08x", expected, (int) crc.getValue()));
      }
      int filterId = h.get(at + FILTER_OFFSET) & 0xff;
      int elementSize = h.get(at + ELEMENT_SIZE_OFFSET) & 0xff;
      Filter filter = Filter.fromFormat(filterId, elementSize);
      if (filter == null) {
        throw new CorruptBlockException(Reason.BAD_HEADER, -1, FILTER_OFFSET,
            "unknown filter " + filterId + " with element size " + elementSize);
      }
      if (h.get(at + FLAGS_OFFSET) != 0 || h.getInt(at + HEADER_RESERVED_OFFSET) != 0) {
        throw new CorruptBlockException(Reason.BAD_HEADER, -1, FLAGS_OFFSET,
            "reserved header bits are set");
      }
      int chunkSize = h.getInt(at + CHUNK_SIZE_OFFSET);
      if (chunkSize < MIN_CHUNK_BYTES || chunkSize > MAX_CHUNK_BYTES) {
        throw new CorruptBlockException(Reason.BAD_HEADER, -1, CHUNK_SIZE_OFFSET,
            "chunk size " + chunkSize + " is outside " + MIN_CHUNK_BYTES + ".." + MAX_CHUNK_BYTES);
      }
      long rawLength = h.getLong(at + RAW_LENGTH_OFFSET);
      int chunkCount = h.getInt(at + CHUNK_COUNT_OFFSET);
      if (rawLength < 0 || rawLength > Integer.MAX_VALUE) {
        throw new CorruptBlockException(Reason.BAD_HEADER, -1, RAW_LENGTH_OFFSET,
            "raw length " + rawLength + " is larger than any block (at most 2^31 - 1 bytes)");
      }
      if (chunkCount < 0 || chunkCount(rawLength, chunkSize) != chunkCount) {
        throw new CorruptBlockException(Reason.BAD_HEADER, -1, RAW_LENGTH_OFFSET,
            "raw length " + rawLength + " does not need " + chunkCount + " chunks of " + chunkSize);
      }
      return new Header(filter, chunkSize, chunkCount, rawLength);
    }

    /** The raw size of the largest chunk, which bounds every buffer a reader needs. */
    int largestChunk() {
      return (int) Math.min(chunkSize, rawLength);
    }

    void requireRoom(ByteBuffer dst) {
      if (dst.remaining() < rawLength) {
        throw new IllegalArgumentException(
            "destination has " + dst.remaining() + " bytes remaining, the block decodes to "
                + rawLength);
      }
    }
  }

  /** Validates and decodes chunks of one container. */
  static final class ChunkDecoder {
    private final Header header;
    private final FilterBuffers scratch;
    private final CRC32C crc = new CRC32C();
    private int rawLength;
    private int stored;
    private int mode;
    private int expectedCrc;

    ChunkDecoder(Header header) {
      this.header = header;
      this.scratch = header.filter == Filter.NONE ? null : filterBuffers(header.largestChunk());
    }

    /** Reads and checks the chunk header at {@code at}; returns the stored length. */
    int readChunkHeader(ByteBuffer src, int at, int index, long offset)
        throws CorruptBlockException {
      ByteBuffer h = src.duplicate().order(ByteOrder.LITTLE_ENDIAN);
      rawLength = h.getInt(at + CHUNK_RAW_LENGTH_OFFSET);
      stored = h.getInt(at + CHUNK_STORED_LENGTH_OFFSET);
      mode = h.get(at + CHUNK_MODE_OFFSET) & 0xff;
      expectedCrc = h.getInt(at + CHUNK_CRC_OFFSET);
      long expectedRaw =
          index < header.chunkCount - 1
              ? header.chunkSize
              : header.rawLength - (long) header.chunkSize * (header.chunkCount - 1);
      if (rawLength != expectedRaw) {
        throw new CorruptBlockException(Reason.LENGTH_OUT_OF_BOUNDS, index, offset,
            "chunk says " + rawLength + " raw bytes, the header implies " + expectedRaw);
      }
      if (mode != MODE_RAW && mode != MODE_LZ4
          || h.get(at + CHUNK_RESERVED_OFFSET) != 0
          || h.get(at + CHUNK_RESERVED_OFFSET + 1) != 0
          || h.get(at + CHUNK_RESERVED_OFFSET + 2) != 0) {
        throw new CorruptBlockException(Reason.BAD_HEADER, index, offset,
            "unknown chunk mode " + mode + " or reserved bits set");
      }
      int maxStored = mode == MODE_RAW ? rawLength : maxLz4Length(rawLength);
      if (stored < 0 || stored > maxStored || (mode == MODE_RAW && stored != rawLength)) {
        throw new CorruptBlockException(Reason.LENGTH_OUT_OF_BOUNDS, index, offset,
            "stored length " + stored + " is impossible for " + rawLength + " raw bytes in mode "
                + mode);
      }
      return stored;
    }

    /** Decodes the chunk whose header is at {@code at} into {@code dst} at {@code out}. */
    int decodeChunk(ByteBuffer src, int at, ByteBuffer dst, int out, int index, long offset)
        throws CorruptBlockException {
      int payload = at + CHUNK_HEADER_BYTES;
      if (mode == MODE_RAW) {
        dst.put(out, src, payload, rawLength);
      } else {
        ByteBuffer target = scratch == null ? dst : scratch.filteredView;
        int targetOff = scratch == null ? out : 0;
        int n;
        try {
          n = DECOMPRESSOR.decompress(src, payload, stored, target, targetOff, rawLength);
        } catch (LZ4Exception e) {
          throw new CorruptBlockException(Reason.SIZE_MISMATCH, index, offset,
              "LZ4 data is malformed or decodes past " + rawLength + " bytes: " + e.getMessage());
        }
        if (n != rawLength) {
          throw new CorruptBlockException(Reason.SIZE_MISMATCH, index, offset,
              "LZ4 data decodes to " + n + " bytes, the chunk says " + rawLength);
        }
        if (scratch != null) {
          dst.put(out, removeFilter(header.filter, scratch, rawLength), 0, rawLength);
        }
      }
      crc.reset();
      crc.update(src.slice(at, CHUNK_CRC_OFFSET));
      crc.update(dst.slice(out, rawLength));
      if ((int) crc.getValue() != expectedCrc) {
        throw new CorruptBlockException(Reason.CHECKSUM_MISMATCH, index, offset,
            String.format("chunk checksum 0x%08x, computed 0x%08x over its %d decoded bytes",
                expectedCrc, (int) crc.getValue(), rawLength));
      }
      return rawLength;
    }
  }

  /** Settings of a {@link BlockCodec}. */
  public static final class Builder {
    private int chunkSizeBytes = DEFAULT_CHUNK_BYTES;
    private Filter filter = Filter.NONE;
    private int minSavingsPercent = DEFAULT_MIN_SAVINGS_PERCENT;
    private Executor executor;
    private int threads = 1;

    private Builder() {}

    /**
     * Encodes up to {@code threads} chunks at a time, the calling thread plus {@code threads - 1}
     * tasks on {@code executor}. Extra memory is bounded by {@code threads} encoded chunks, never
     * by the payload. Without this setting the codec runs on the calling thread only.
     */
    public Builder executor(Executor executor, int threads) {
      Objects.requireNonNull(executor, "executor");
      if (threads < 1) {
        throw new IllegalArgumentException("threads must be at least 1, got " + threads);
      }
      this.executor = executor;
      this.threads = threads;
      return this;
    }

    /** Raw bytes per chunk: 4 KiB to 16 MiB; default 256 KiB. */
    public Builder chunkSizeBytes(int chunkSizeBytes) {
      if (chunkSizeBytes < MIN_CHUNK_BYTES || chunkSizeBytes > MAX_CHUNK_BYTES) {
        throw new IllegalArgumentException(
            "chunk size must be " + MIN_CHUNK_BYTES + " to " + MAX_CHUNK_BYTES + " bytes, got "
                + chunkSizeBytes);
      }
      this.chunkSizeBytes = chunkSizeBytes;
      return this;
    }

    /** The filter applied before LZ4; default {@link Filter#NONE}. */
    public Builder filter(Filter filter) {
      this.filter = Objects.requireNonNull(filter, "filter");
      return this;
    }

    /**
     * How much a chunk must shrink, in percent, to be stored compressed rather than raw: 0 to 99;
     * default 2.
     */
    public Builder minSavingsPercent(int minSavingsPercent) {
      if (minSavingsPercent < 0 || minSavingsPercent > 99) {
        throw new IllegalArgumentException(
            "minSavingsPercent must be 0 to 99, got " + minSavingsPercent);
      }
      this.minSavingsPercent = minSavingsPercent;
      return this;
    }

    public BlockCodec build() {
      return new BlockCodec(this);
    }
  }
}
