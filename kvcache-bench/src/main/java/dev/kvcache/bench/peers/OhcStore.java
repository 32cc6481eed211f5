package dev.kvcache.bench.peers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import org.caffinitas.ohc.CacheSerializer;
import org.caffinitas.ohc.DirectValueAccess;
import org.caffinitas.ohc.OHCache;
import org.caffinitas.ohc.OHCacheBuilder;

/**
 * OHC (off-heap cache, as used by Cassandra). Puts copy the caller's buffer into OHC's memory
 * through the serializer; reads use {@code getDirect}, a zero-copy view, copied once into the
 * destination.
 */
final class OhcStore implements PeerStore {
  private final OHCache<Long, ByteBuffer> cache;

  OhcStore(long capacityBytes, int blockSizeBytes) {
    cache =
        OHCacheBuilder.<Long, ByteBuffer>newBuilder()
            .keySerializer(new LongSerializer())
            .valueSerializer(new BufferSerializer())
            .capacity(capacityBytes)
            .segmentCount(2)
            .maxEntrySize(blockSizeBytes + 1024L)
            .throwOOME(true)
            .build();
  }

  @Override
  public boolean put(long id, ByteBuffer src) {
    return cache.put(id, src);
  }

  @Override
  public boolean getInto(long id, ByteBuffer dst) {
    try (DirectValueAccess access = cache.getDirect(id)) {
      if (access == null) {
        return false;
      }
      dst.clear();
      dst.put(access.buffer());
      return true;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() {
    try {
      cache.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static final class LongSerializer implements CacheSerializer<Long> {
    @Override
    public void serialize(Long value, ByteBuffer buf) {
      buf.putLong(value);
    }

    @Override
    public Long deserialize(ByteBuffer buf) {
      return buf.getLong();
    }

    @Override
    public int serializedSize(Long value) {
      return Long.BYTES;
    }
  }

  private static final class BufferSerializer implements CacheSerializer<ByteBuffer> {
    @Override
    public void serialize(ByteBuffer value, ByteBuffer buf) {
      buf.put(value.duplicate());
    }

    @Override
    public ByteBuffer deserialize(ByteBuffer buf) {
      ByteBuffer copy = ByteBuffer.allocate(buf.remaining());
      copy.put(buf).flip();
      return copy;
    }

    @Override
    public int serializedSize(ByteBuffer value) {
      return value.remaining();
    }
  }
}
