package dev.kvcache.codec;

import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_HEADER_BYTES;
import static dev.kvcache.internal.codec.ContainerLayout.HEADER_BYTES;
import static dev.kvcache.internal.codec.ContainerLayout.MAX_CHUNK_BYTES;
import static dev.kvcache.internal.codec.ContainerLayout.MIN_CHUNK_BYTES;

import dev.kvcache.codec.CorruptBlockException.Reason;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.zip.CRC32C;

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
 * <p>This class is the front. The header is read, checked and written by {@code
 * ContainerHeader} (its byte layout is {@code ContainerLayout}'s); a chunk is written by {@code
 * ChunkEncoder} and read by {@code ChunkDecoder}; {@code ParallelCodec} shares a buffer's chunks
 * among threads, {@code ContainerStreams} moves containers through channels, and {@code
 * CodecBuffers} holds the memory they reuse.
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

  /** Default chunk size: 256 KiB. */
  public static final int DEFAULT_CHUNK_BYTES = 256 << 10;

  /** Default margin: a chunk must shrink by at least 2% to be stored compressed. */
  public static final int DEFAULT_MIN_SAVINGS_PERCENT = 2;

  /** Length of the container's header, all {@link #decodedLength} needs to read. */
  public static final int CONTAINER_HEADER_BYTES = HEADER_BYTES;

  private final int chunkSizeBytes;
  private final Filter filter;
  private final int minSavingsPercent;
  private final ChunkEncoder chunks;
  private final Executor executor;
  private final int threads;

  private BlockCodec(Builder builder) {
    this.chunkSizeBytes = builder.chunkSizeBytes;
    this.filter = builder.filter;
    this.minSavingsPercent = builder.minSavingsPercent;
    this.executor = builder.executor;
    this.threads = builder.threads;
    this.chunks = new ChunkEncoder(filter, chunkSizeBytes, minSavingsPercent);
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
    return HEADER_BYTES + ContainerHeader.chunkCount(rawLength, chunkSizeBytes) * CHUNK_HEADER_BYTES
        + rawLength;
  }

  /**
   * The most bytes a container of {@code rawLength} bytes can take, whatever chunk size its encoder
   * used (the smallest chunks have the most headers): the bound on a container from elsewhere.
   */
  public static long maxContainerLength(long rawLength) {
    if (rawLength < 0) {
      throw new IllegalArgumentException("negative length " + rawLength);
    }
    return HEADER_BYTES
        + ContainerHeader.chunkCount(rawLength, MIN_CHUNK_BYTES) * CHUNK_HEADER_BYTES + rawLength;
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
      out = ParallelCodec.encode(chunks, chunkSizeBytes, src, dst, out, executor, threads);
    } else {
      CRC32C crc = new CRC32C();
      for (int in = src.position(), end = src.limit(); in < end; ) {
        int len = Math.min(chunkSizeBytes, end - in);
        out += chunks.encode(src, in, len, dst, out, crc);
        in += len;
      }
    }
    dst.position(out);
    return out - start;
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
    ContainerStreams.requireBlocking(out);
    int rawLength = src.remaining();
    ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES);
    writeHeader(header, 0, rawLength);
    long written = ContainerStreams.writeFully(out, header);
    CodecBuffers.ChunkBuffers buffers = CodecBuffers.takeChunkBuffers(largestChunk(rawLength));
    try {
      ByteBuffer chunk = buffers.encoded;
      CRC32C crc = new CRC32C();
      for (int in = src.position(), end = src.limit(); in < end; ) {
        int len = Math.min(chunkSizeBytes, end - in);
        int size = chunks.encode(src, in, len, chunk, 0, crc);
        written += ContainerStreams.writeFully(out, chunk.clear().limit(size));
        in += len;
      }
      return written;
    } finally {
      CodecBuffers.giveBack(buffers);
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
   * @deprecated nothing in kvcache uses it; write the bytes to an {@link #encoder} instead, which
   *     also takes them in parts of any size
   */
  @Deprecated(since = "0.1.0", forRemoval = true)
  public long encode(ReadableByteChannel in, long rawLength, WritableByteChannel out)
      throws IOException {
    Objects.requireNonNull(in, "in");
    Objects.requireNonNull(out, "out");
    ContainerStreams.requireBlocking(in);
    ContainerStreams.requireBlocking(out);
    requireBlockLength(rawLength);
    ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES);
    writeHeader(header, 0, rawLength);
    long written = ContainerStreams.writeFully(out, header);
    CodecBuffers.ChunkBuffers buffers = CodecBuffers.takeChunkBuffers(largestChunk(rawLength));
    try {
      CRC32C crc = new CRC32C();
      for (long done = 0; done < rawLength; ) {
        int len = ContainerStreams.readChunk(in, buffers.raw, chunkSizeBytes, done, rawLength);
        int size = chunks.encode(buffers.raw, 0, len, buffers.encoded, 0, crc);
        written += ContainerStreams.writeFully(out, buffers.encoded.clear().limit(size));
        done += len;
      }
      return written;
    } finally {
      CodecBuffers.giveBack(buffers);
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
   * @deprecated nothing in kvcache uses it; read the bytes into a buffer and {@link
   *     #encode(ByteBuffer, ByteBuffer)} it, or write them to an {@link #encoder}
   */
  @Deprecated(since = "0.1.0", forRemoval = true)
  public int encode(ReadableByteChannel in, long rawLength, ByteBuffer dst) throws IOException {
    Objects.requireNonNull(in, "in");
    Objects.requireNonNull(dst, "dst");
    ContainerStreams.requireBlocking(in);
    requireBlockLength(rawLength);
    requireRoom(rawLength, dst);
    int start = dst.position();
    writeHeader(dst, start, rawLength);
    int out = start + HEADER_BYTES;
    CodecBuffers.ChunkBuffers buffers = CodecBuffers.takeChunkBuffers(largestChunk(rawLength));
    try {
      CRC32C crc = new CRC32C();
      for (long done = 0; done < rawLength; ) {
        int len = ContainerStreams.readChunk(in, buffers.raw, chunkSizeBytes, done, rawLength);
        out += chunks.encode(buffers.raw, 0, len, dst, out, crc);
        done += len;
      }
    } finally {
      CodecBuffers.giveBack(buffers);
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
    ContainerStreams.requireBlocking(out);
    requireBlockLength(rawLength);
    return new BlockEncoder(this, rawLength, out);
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

  /** Writes the container's header for {@code rawLength} bytes at {@code at} in {@code dst}. */
  void writeHeader(ByteBuffer dst, int at, long rawLength) {
    ContainerHeader.write(dst, at, filter, chunkSizeBytes, rawLength);
  }

  /** The writer of this codec's chunks. */
  ChunkEncoder chunks() {
    return chunks;
  }

  /**
   * The decoded size of the container starting at {@code encoded}'s position, from its header
   * alone (the first 32 bytes).
   *
   * @throws CorruptBlockException if the header is missing, truncated or invalid
   */
  public static long decodedLength(ByteBuffer encoded) throws CorruptBlockException {
    return ContainerHeader.read(encoded, encoded.position()).rawLength();
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
    ContainerHeader header = ContainerHeader.read(src, base);
    if (src.limit() - base - HEADER_BYTES < (long) CHUNK_HEADER_BYTES * header.chunkCount()) {
      throw new CorruptBlockException(Reason.TRUNCATED, -1, 0,
          header.chunkCount() + " chunks cannot fit in the " + (src.limit() - base)
              + " bytes present");
    }
    header.requireRoom(dst);
    int out = dst.position();
    ChunkDecoder decoder = new ChunkDecoder(header);
    int[] chunkAt = new int[header.chunkCount()];
    int[] storedAt = threads > 1 ? new int[header.chunkCount()] : null;
    int in = base + HEADER_BYTES;
    for (int i = 0; i < header.chunkCount(); i++) {
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
        decoder.decodeChunk(src, in, dst, out + i * header.chunkSize(), i, in - base);
      }
      chunkAt[i] = in;
      if (storedAt != null) {
        storedAt[i] = stored;
      }
      in += CHUNK_HEADER_BYTES + stored;
    }
    if (threads > 1) {
      ParallelCodec.decode(header, src, base, chunkAt, storedAt, dst, out, executor, threads);
    }
    src.position(in);
    dst.position(out + (int) header.rawLength());
  }

  /**
   * Decodes a container read from {@code in} (a blocking channel) into {@code dst} at its
   * position, one chunk at a time, holding at most one encoded chunk in memory; reads exactly the
   * container's bytes.
   *
   * @throws CorruptBlockException if the container is truncated, malformed or fails a checksum
   * @throws IllegalArgumentException if {@code dst} has fewer bytes remaining than the decoded size
   * @deprecated nothing in kvcache uses it; feed the bytes to a {@link #decoder} instead, which
   *     also takes them in parts of any size
   */
  @Deprecated(since = "0.1.0", forRemoval = true)
  public static void decode(ReadableByteChannel in, ByteBuffer dst) throws IOException {
    Objects.requireNonNull(in, "in");
    Objects.requireNonNull(dst, "dst");
    int[] out = {dst.position()};
    ContainerStreams.readChunks(in, header -> header.requireRoom(dst),
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
   * @deprecated nothing in kvcache uses it; feed the bytes to a {@link #decoder} instead, whose
   *     sink gets each chunk once it has passed its checksum
   */
  @Deprecated(since = "0.1.0", forRemoval = true)
  public static long decode(ReadableByteChannel in, WritableByteChannel out) throws IOException {
    Objects.requireNonNull(in, "in");
    Objects.requireNonNull(out, "out");
    ContainerStreams.requireBlocking(out);
    long[] written = {0};
    ContainerStreams.readChunks(in, header -> { }, (decoder, chunk, spare, i, offset) -> {
      int decoded = decoder.decodeChunk(chunk, 0, spare.clear(), 0, i, offset);
      written[0] += ContainerStreams.writeFully(out, spare.limit(decoded));
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
