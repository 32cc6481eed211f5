package dev.kvcache.disk.internal;

/**
 * Where a block's record lies and what it holds: one index entry. Immutable except for the hit
 * count, which reads bump without synchronization (it only guides which blocks a reclaim keeps).
 */
public final class Location {

  public final int superBlockId;
  public final int payloadOffset;
  public final int storedLength;
  public final int rawLength;
  public final int payloadCrc;
  public final int encoding;
  public final long sequence;
  private volatile int hits;

  public Location(int superBlockId, int payloadOffset, int storedLength, int rawLength,
      int payloadCrc, int encoding, long sequence, int hits) {
    this.superBlockId = superBlockId;
    this.payloadOffset = payloadOffset;
    this.storedLength = storedLength;
    this.rawLength = rawLength;
    this.payloadCrc = payloadCrc;
    this.encoding = encoding;
    this.sequence = sequence;
    this.hits = hits;
  }

  public int hits() {
    return hits;
  }

  /** Counts a read; saturates instead of overflowing. */
  public void hit() {
    int h = hits;
    if (h < Integer.MAX_VALUE) {
      hits = h + 1;
    }
  }

  /** Bytes the record takes in its super-block, header included. */
  public long recordBytes() {
    return RecordLayout.HEADER_BYTES + (long) storedLength;
  }
}
