package dev.kvcache.disk;

import static dev.kvcache.disk.internal.RecordLayout.ENCODING_CONTAINER;
import static dev.kvcache.disk.internal.RecordLayout.ENCODING_RAW;
import static dev.kvcache.disk.internal.RecordLayout.ENCODING_SEALED;
import static dev.kvcache.disk.internal.RecordLayout.HEADER_BYTES;
import static dev.kvcache.disk.internal.RecordLayout.KIND_BLOCK;
import static dev.kvcache.disk.internal.RecordLayout.KIND_TOMBSTONE;
import static dev.kvcache.disk.internal.RecordLayout.largerThanAPage;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockWriter;
import dev.kvcache.PutStatus;
import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.BlockEncoder;
import dev.kvcache.disk.SuperBlockSpace.Reservation;
import dev.kvcache.disk.internal.DirectWrites;
import dev.kvcache.disk.internal.Doorkeeper;
import dev.kvcache.disk.internal.JournalEntry;
import dev.kvcache.disk.internal.JournalLayout;
import dev.kvcache.disk.internal.Location;
import dev.kvcache.disk.internal.PartWriter;
import dev.kvcache.disk.internal.PositionedChannel;
import dev.kvcache.disk.internal.RecordLayout;
import dev.kvcache.disk.internal.Records;
import dev.kvcache.disk.internal.SuperBlock;
import dev.kvcache.seal.Sealer;
import dev.kvcache.spi.AbstractBlockWriter;
import dev.kvcache.spi.ChecksumMismatchException;
import dev.kvcache.spi.TierCounters;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The disk tier's writes: a put writes the caller's bytes straight to their place in a
 * reservation in the active super-block with a positional write (no staging copy for direct
 * buffers), or, with {@link DiskTierConfig#directWrites()}, past the page cache through aligned
 * buffers ({@link DirectWrites}), or from the caller's memory itself where a whole block lies on
 * pages (the RAM tier's, spilled); then its header, and commits the record (journal entry and
 * index, under the sync policy's forces); a writer does the same for a block that arrives in
 * parts; a delete writes a tombstone record and journals it. A write that fails loses only the
 * block being written: the put is refused, counted, and the tier reports itself degraded until a
 * write succeeds.
 */
final class RecordWrites {

  private static final Logger log = LoggerFactory.getLogger(RecordWrites.class);
  /** Written over the parts of a record whose writer was closed without a commit. */
  private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(64 << 10).asReadOnlyBuffer();

  private final DiskTierConfig config;
  private final Path dir;
  private final BlockCodec codec;
  private final BlockIndex index;
  private final SuperBlockSpace space;
  private final ConcurrentSkipListMap<Integer, SuperBlock> superBlocks;
  private final MetadataLog metadata;
  private final AtomicLong sequence;
  /** Keys put once, for {@link Admission#SEEN_BEFORE}; null otherwise. */
  private final Doorkeeper doorkeeper;
  private final TierCounters counters;
  private final LongAdder unchangedPuts;
  private final LongAdder bytesWritten;
  private final LongAdder writeFailures;
  /** Streams of payloads written past the page cache; null when writes go through it. */
  private final DirectWrites direct;
  /** The last write's failure, until a write succeeds; null when the last write succeeded. */
  private volatile String writeFailure;
  /** The tag to keep with a block written ({@link dev.kvcache.spi.BlockTags}), or null. */
  private final Function<BlockKey, byte[]> tagOf;
  /** The sealed namespaces; null if none is. */
  private final Seals seals;
  /** A buffer per thread that blocks are sealed into before they are written. */
  private final ThreadLocal<ByteBuffer> sealedBuffers = new ThreadLocal<>();

  RecordWrites(DiskTierConfig config, BlockIndex index, SuperBlockSpace space,
      MetadataLog metadata, AtomicLong sequence, TierCounters counters, LongAdder unchangedPuts,
      LongAdder bytesWritten, LongAdder writeFailures, Function<BlockKey, byte[]> tagOf,
      Seals seals) {
    this.tagOf = tagOf;
    this.seals = seals;
    this.config = config;
    this.dir = config.directory();
    this.codec = config.codec();
    this.index = index;
    this.space = space;
    this.superBlocks = space.superBlocks();
    this.metadata = metadata;
    this.sequence = sequence;
    this.counters = counters;
    this.unchangedPuts = unchangedPuts;
    this.bytesWritten = bytesWritten;
    this.writeFailures = writeFailures;
    this.direct = config.directWrites() ? new DirectWrites(dir.toString()) : null;
    this.doorkeeper = config.admission() == Admission.SEEN_BEFORE
        ? new Doorkeeper((int) Math.min(1 << 26, 8 * Math.max(1, config.capacityBytes() >> 16)))
        : null;
  }

  /** Ends the threads of direct writes, once no write is under way. */
  void close() {
    if (direct != null) {
      direct.close();
    }
  }

  /** Why writes fail, until one succeeds; null while they do not. */
  String writeFailure() {
    return writeFailure;
  }


  /** See {@link DiskTier#put}; the block is neither empty nor larger than the tier's largest. */
  PutStatus put(BlockKey key, ByteBuffer src) {
    return put(key, src, null);
  }

  /**
   * See {@link DiskTier#put} and {@link DiskTier#putChecked}; the block is neither empty nor
   * larger than the tier's largest.
   *
   * @param expectedCrc the CRC32C the bytes must have, checked on the copy written where the
   *     payload goes direct and before the write elsewhere; null to check nothing
   */
  PutStatus put(BlockKey key, ByteBuffer src, Integer expectedCrc) {
    int length = src.remaining();
    if (doorkeeper != null && !index.contains(key) && !doorkeeper.seenOrRemember(key)) {
      counters.put();
      return PutStatus.NOT_ADMITTED;
    }
    try {
      ByteBuffer data = src.duplicate();
      // a block of a sealed namespace is sealed first, then written as raw bytes are, never
      // encoded with the codec nor compared with the record it replaces
      Sealer sealer = seals == null ? null : seals.forWrite(key);
      BlockCodec encoder = sealer == null ? codec : null;
      if ((encoder != null || sealer != null) && expectedCrc != null) {
        ChecksumMismatchException.check(key, data, expectedCrc); // read before the write: first
      }
      if (sealer != null) {
        data = seal(sealer, key, data);
        expectedCrc = null;
      }
      // raw bytes said to have a checksum are checked as they are written (writePayload)
      int rawCrc = encoder != null ? 0 : expectedCrc != null ? expectedCrc : Records.crc(data);
      byte[] tag = tagOf.apply(key);
      if (encoder == null && sealer == null && isUnchanged(key, data, rawCrc, tag)) {
        unchangedPuts.increment();
        counters.put();
        return PutStatus.STORED;
      }
      int raw = data.remaining();
      long reserve = encoder == null ? raw : encoder.maxEncodedLength(length);
      Reservation r = space.reserve(space.streams().of(key), reserve, tagBytes(tag));
      if (r == null) {
        counters.rejection();
        return PutStatus.REJECTED_NO_SPACE;
      }
      try {
        int stored;
        int payloadCrc;
        int encoding;
        try {
          if (encoder == null) {
            writePayload(r, key, data, expectedCrc);
            stored = raw;
            payloadCrc = rawCrc;
            encoding = sealer != null ? ENCODING_SEALED : ENCODING_RAW;
          } else {
            PositionedChannel out = new PositionedChannel(r.sb, r.payload);
            encoder.encode(data, out);
            stored = (int) out.written();
            payloadCrc = out.crc();
            encoding = ENCODING_CONTAINER;
            space.giveBack(r, stored);
          }
        } catch (IOException | ChecksumMismatchException e) {
          space.abandon(r);
          r.sb.unpin();
          throw e;
        }
        return completeRecord(r, r.sequence, key, length, stored, payloadCrc, encoding, tag);
      } finally {
        r.sb.finishRecord();
      }
    } catch (IOException e) {
      return writeFailed(key, e);
    }
  }

  /**
   * {@code data}, the block of {@code key}, sealed into this thread's buffer ({@code
   * ENCODING_SEALED}'s layout), ready to be read.
   */
  private ByteBuffer seal(Sealer sealer, BlockKey key, ByteBuffer data) {
    ByteBuffer sealed = sealedBuffer(Sealer.sealedLength(data.remaining()));
    sealer.seal(key, data, sealed);
    return sealed.flip();
  }

  /** This thread's buffer for a sealed block of {@code bytes}, cleared; grown when too small. */
  private ByteBuffer sealedBuffer(int bytes) {
    ByteBuffer b = sealedBuffers.get();
    if (b == null || b.capacity() < bytes) { // on a page: a direct write takes it in place
      int pages = (int) RecordLayout.alignUp(bytes, RecordLayout.PAGE);
      b = ByteBuffer.allocateDirect(pages + RecordLayout.PAGE).alignedSlice(RecordLayout.PAGE);
      sealedBuffers.set(b);
    }
    return b.clear().limit(bytes);
  }

  /**
   * Writes a raw payload to its place in {@code r}: past the page cache where it goes direct.
   *
   * @param expectedCrc the CRC32C the bytes must have, or null: a direct write checks its copy,
   *     a write through the page cache checks the bytes first
   * @throws ChecksumMismatchException if they do not have it; what was written is not a record
   */
  private void writePayload(Reservation r, BlockKey key, ByteBuffer data, Integer expectedCrc)
      throws IOException {
    DirectWrites.Stream stream = directStream(r, data.remaining(), expectedCrc != null);
    if (stream == null) {
      if (expectedCrc != null) {
        ChecksumMismatchException.check(key, data, expectedCrc);
      }
      r.sb.write(data, r.payload);
      return;
    }
    try {
      stream.writeInPlace(data); // data stays as it is until the put returns
      stream.finish();
    } catch (IOException | RuntimeException e) {
      stream.abandon();
      throw e;
    }
    if (expectedCrc != null && stream.crc32c() != expectedCrc) {
      throw new ChecksumMismatchException(key, expectedCrc, stream.crc32c());
    }
  }

  /**
   * A stream of a raw payload of {@code length} bytes past the page cache into {@code r}; null if
   * it goes through the page cache: direct writes are off, the record fits in a page, or the
   * super-block's file takes no direct writes.
   */
  private DirectWrites.Stream directStream(Reservation r, long length, boolean checksum) {
    return direct != null && largerThanAPage(length) && r.sb.directAlignment() > 0
        ? direct.open(r.sb, r.payload, checksum) : null;
  }

  /** The bytes {@code tag} takes before a record's header; 0 for none. */
  private static int tagBytes(byte[] tag) {
    return tag == null ? 0 : RecordLayout.tagBytes(tag.length);
  }

  /**
   * Completes a record whose payload is written into {@code r}: writes its tag, if it has one, and
   * its header, unpins the super-block, journals the record and indexes it.
   *
   * @return {@link PutStatus#STORED}, or {@link PutStatus#NOT_ADMITTED} if the super-block was
   *     dropped to make room while the payload was being written
   * @throws IOException if the header or the journal entry cannot be written; the reservation is
   *     then given back
   */
  private PutStatus completeRecord(Reservation r, long seq, BlockKey key, int length, int stored,
      int payloadCrc, int encoding, byte[] tag) throws IOException {
    int tagBytes = tagBytes(tag);
    try {
      if (tag != null) {
        r.sb.write(Records.tag(tag, key, seq), r.payload - HEADER_BYTES - tagBytes);
      }
      r.sb.write(Records.header(KIND_BLOCK, encoding, seq, key, length, stored, payloadCrc,
          tagBytes), r.payload - HEADER_BYTES);
    } catch (IOException e) {
      space.abandon(r);
      throw e;
    } finally {
      r.sb.unpin();
    }
    space.written(r.sb); // now that its bytes are written: the next sync forces them
    Location loc = new Location(r.sb.id(), (int) r.payload, stored, length, payloadCrc, encoding,
        seq, 0);
    boolean[] installed = {false};
    metadata.commit(JournalEntry.put(key, loc, 0, config.syncPolicy() == SyncPolicy.ALWAYS), r.sb,
        () -> installed[0] = install(key, loc));
    bytesWritten.add(HEADER_BYTES + tagBytes + stored + JournalLayout.ENTRY_BYTES);
    counters.put();
    if (writeFailure != null) {
      writeFailure = null;
      log.info("writes to the disk tier in {} succeed again", dir);
    }
    return installed[0] ? PutStatus.STORED : PutStatus.NOT_ADMITTED;
  }

  /**
   * A writer straight into the block's record: room is reserved in the active super-block when it
   * opens, the parts are written to their place there as they come, and the commit writes the
   * record's header and journals it. No buffer of the whole block lies in between: small parts
   * are gathered into positional writes of 256 KiB ({@link PartWriter}), or encoded chunk by chunk
   * when the tier stores blocks encoded.
   *
   * <p>The block's sequence is taken at the commit, so a put of the same key that completes while
   * the writer is open is replaced by the commit, as it would be by a later put. A writer that is
   * closed without a commit zeroes what it wrote before giving its room back, so that a scan of
   * the records never mistakes its bytes for a record. The block is neither empty nor larger than
   * the tier's largest.
   */
  BlockWriter writer(BlockKey key, int length) {
    if (doorkeeper != null && !index.contains(key) && !doorkeeper.seenOrRemember(key)) {
      return new UnadmittedWriter(key, length);
    }
    try {
      byte[] tag = tagOf.apply(key);
      Reservation r = space.reserve(space.streams().of(key),
          codec == null ? length : codec.maxEncodedLength(length), tagBytes(tag));
      if (r != null) {
        return new RecordWriter(key, length, r, tag);
      }
      counters.rejection();
    } catch (IOException e) {
      writeFailed(key, e);
    }
    return BlockWriter.rejected(key, length, PutStatus.REJECTED_NO_SPACE);
  }

  /** The writer of a block's record in a reservation; see {@link #writer}. */
  private final class RecordWriter extends AbstractBlockWriter {
    private final Reservation r;
    private final PositionedChannel out;
    /** The raw payload's way through the page cache, or null: {@link #stream} or encoded. */
    private final PartWriter parts;
    /** The raw payload's way past the page cache, or null. */
    private final DirectWrites.Stream stream;
    private final BlockEncoder encoder;
    /** The tag to keep with the block, asked for as its room was reserved; null for none. */
    private final byte[] tag;
    private IOException failure;

    RecordWriter(BlockKey key, int length, Reservation r, byte[] tag) throws IOException {
      super(key, length);
      this.r = r;
      this.tag = tag;
      // a raw record's checksum is the one the writer computes as the parts come in
      this.out = new PositionedChannel(r.sb, r.payload, codec != null);
      this.stream = codec == null ? directStream(r, length, false) : null;
      this.parts = codec == null && stream == null ? new PartWriter(out) : null;
      try {
        this.encoder = codec == null ? null : codec.encoder(length, out);
      } catch (IOException e) {
        space.abandon(r);
        r.sb.unpin();
        r.sb.finishRecord();
        throw e;
      }
    }

    @Override
    protected void copyIn(ByteBuffer src, int offset) {
      if (failure != null) {
        return; // the commit reports it
      }
      try {
        if (stream != null) {
          stream.write(src);
        } else if (encoder == null) {
          parts.write(src);
        } else {
          encoder.write(src.duplicate());
        }
      } catch (IOException e) {
        failure = e;
      }
    }

    @Override
    protected PutStatus publish() {
      try {
        return publishRecord();
      } finally {
        r.sb.finishRecord();
      }
    }

    private PutStatus publishRecord() {
      int stored;
      try {
        if (failure != null) {
          throw failure;
        }
        space.requireOpen();
        if (stream != null) {
          stored = (int) stream.finish();
        } else if (encoder == null) {
          parts.flush();
          parts.close();
          stored = (int) out.written();
        } else {
          stored = (int) encoder.finish();
        }
      } catch (IOException e) {
        discardRecord();
        return writeFailed(key(), e);
      } catch (RuntimeException e) {
        discardRecord();
        throw e;
      }
      if (encoder != null) {
        space.giveBack(r, stored);
      }
      try {
        return completeRecord(r, sequence.incrementAndGet(), key(), length(), stored,
            encoder == null ? crc32c().getAsInt() : out.crc(),
            encoder == null ? ENCODING_RAW : ENCODING_CONTAINER, tag);
      } catch (IOException e) {
        return writeFailed(key(), e);
      }
    }

    @Override
    protected void discard() {
      try {
        discardRecord();
      } finally {
        r.sb.finishRecord();
      }
    }

    /** Zeroes what was written and gives the room back. */
    private void discardRecord() {
      long written;
      if (stream != null) {
        stream.abandon();
        written = stream.written();
      } else {
        if (encoder != null) {
          encoder.close();
        } else {
          parts.close();
        }
        written = out.written();
      }
      try {
        for (long at = r.payload, end = r.payload + written; at < end; ) {
          int n = (int) Math.min(ZEROS.capacity(), end - at);
          r.sb.write(ZEROS.duplicate().limit(n), at);
          at += n;
        }
      } catch (IOException e) {
        log.debug("zeroing the abandoned record of {}: {}", key(), e.toString());
      }
      space.abandon(r);
      r.sb.unpin();
    }
  }

  /** A writer whose block the doorkeeper turned away: it takes the bytes and keeps none. */
  private final class UnadmittedWriter extends AbstractBlockWriter {
    UnadmittedWriter(BlockKey key, int length) {
      super(key, length, false); // keeps nothing to checksum
    }

    @Override
    protected void copyIn(ByteBuffer src, int offset) {}

    @Override
    public boolean writesMayWait() {
      return false;
    }

    @Override
    protected PutStatus publish() {
      counters.put();
      return PutStatus.NOT_ADMITTED;
    }

    @Override
    protected void discard() {}
  }

  /**
   * A put that failed to write: counted, and the tier reports itself degraded until a write
   * succeeds. Logged as a warning when writes start failing, then only at debug level.
   */
  private PutStatus writeFailed(BlockKey key, IOException e) {
    writeFailures.increment();
    counters.rejection();
    if (writeFailure == null) {
      log.warn("put of {} failed, and puts fail until a write to {} succeeds: {}", key, dir,
          e.toString());
    } else {
      log.debug("put of {} failed: {}", key, e.toString());
    }
    writeFailure = "writes to " + dir + " fail: " + e.getMessage();
    return PutStatus.REJECTED_NO_SPACE;
  }

  /**
   * Whether the block stored under {@code key} already holds exactly these bytes, with this tag
   * (null: none).
   */
  private boolean isUnchanged(BlockKey key, ByteBuffer data, int crc, byte[] tag) {
    Location cur = index.get(key);
    if (cur == null || cur.encoding != ENCODING_RAW || cur.rawLength != data.remaining()
        || cur.payloadCrc != crc) {
      return false;
    }
    SuperBlock sb = superBlocks.get(cur.superBlockId);
    if (sb == null || !sb.pin()) {
      return false;
    }
    try {
      return sb.slice(cur.payloadOffset, cur.storedLength).mismatch(data) < 0
          && Arrays.equals(Records.tagOf(sb, key, cur), tag);
    } finally {
      sb.unpin();
    }
  }

  /**
   * Indexes {@code loc} under {@code key} unless a newer record is there already, or its
   * super-block was dropped while the record was being written (then it counts as evicted).
   *
   * @return false if the super-block was dropped
   */
  private boolean install(BlockKey key, Location loc) {
    if (!superBlocks.containsKey(loc.superBlockId)) {
      counters.eviction();
      return false;
    }
    index.install(key, loc);
    return true;
  }

  /** See {@link DiskTier#delete}. */
  boolean delete(BlockKey key) {
    Location cur = index.get(key);
    if (cur == null) {
      return false;
    }
    if (!space.ensureJournal()) {
      String why = space.noRoom();
      throw new UncheckedIOException("could not journal the delete of " + key + ": " + why,
          new IOException(why));
    }
    try {
      Reservation r = space.reserve(space.streams().of(key), 0);
      if (r != null) {
        try {
          r.sb.write(Records.header(KIND_TOMBSTONE, ENCODING_RAW, r.sequence, key, 0, 0, 0, 0),
              r.payload - HEADER_BYTES);
        } finally {
          r.sb.unpin();
          r.sb.finishRecord(); // a tombstone is not indexed
        }
        space.written(r.sb);
      }
      long seq = r != null ? r.sequence : sequence.incrementAndGet();
      boolean[] removed = {false};
      metadata.commit(JournalEntry.delete(key, seq), r != null ? r.sb : null,
          () -> removed[0] = index.deleteOlderThan(key, seq));
      bytesWritten.add(HEADER_BYTES + JournalLayout.ENTRY_BYTES);
      if (removed[0]) {
        counters.delete();
      }
      return removed[0];
    } catch (IOException e) {
      throw new UncheckedIOException("could not journal the delete of " + key + " in " + dir, e);
    }
  }
}
