package dev.kvcache.server.events;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePacker;

/**
 * Encodes a batch of {@link KvEvent}s as vLLM's {@code KVEventBatch}: MessagePack, the batch an
 * array {@code [ts, events, data_parallel_rank]}, each event a map tagged by its class name under
 * {@code "type"} (msgspec's tagged structs, as vLLM 0.32 sends them). Block hashes are written as
 * 8-byte unsigned integers whatever their value: llm-d's indexer reads a hash only in that form (or
 * as a signed 8-byte one), not in the shorter forms MessagePack allows for small numbers.
 */
public final class KvEventEncoder {

  private KvEventEncoder() {}

  /**
   * The batch's bytes.
   *
   * @param timestamp seconds since the epoch
   * @param dataParallelRank the rank vLLM's publisher adds; 0 for a server
   */
  public static byte[] encode(double timestamp, List<KvEvent> events, int dataParallelRank) {
    try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
      p.packArrayHeader(3);
      p.packDouble(timestamp);
      p.packArrayHeader(events.size());
      for (KvEvent e : events) {
        if (e instanceof KvEvent.BlockStored s) {
          stored(p, s);
        } else if (e instanceof KvEvent.BlockRemoved r) {
          removed(p, r);
        } else {
          p.packMapHeader(1).packString("type").packString("AllBlocksCleared");
        }
      }
      p.packInt(dataParallelRank);
      return p.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a buffer packer does no I/O
    }
  }

  private static void stored(MessagePacker p, KvEvent.BlockStored s) throws IOException {
    p.packMapHeader(8);
    p.packString("type").packString("BlockStored");
    p.packString("block_hashes");
    hashes(p, s.hashes());
    p.packString("parent_block_hash");
    if (s.parentHash() == null) {
      p.packNil();
    } else {
      hash(p, s.parentHash());
    }
    p.packString("token_ids").packArrayHeader(s.tokens().length);
    for (int t : s.tokens()) {
      p.packInt(t);
    }
    p.packString("block_size").packInt(s.blockSize());
    p.packString("lora_id").packNil();
    p.packString("medium").packString(s.medium());
    p.packString("lora_name");
    if (s.loraName() == null) {
      p.packNil();
    } else {
      p.packString(s.loraName());
    }
  }

  private static void removed(MessagePacker p, KvEvent.BlockRemoved r) throws IOException {
    p.packMapHeader(3);
    p.packString("type").packString("BlockRemoved");
    p.packString("block_hashes");
    hashes(p, r.hashes());
    p.packString("medium").packString(r.medium());
  }

  private static void hashes(MessagePacker p, long[] hashes) throws IOException {
    p.packArrayHeader(hashes.length);
    for (long h : hashes) {
      hash(p, h);
    }
  }

  /** A hash as MessagePack's uint64 ({@code 0xcf} and 8 bytes, big-endian). */
  private static void hash(MessagePacker p, long h) throws IOException {
    byte[] b = new byte[9];
    b[0] = (byte) 0xcf;
    for (int i = 0; i < 8; i++) {
      b[1 + i] = (byte) (h >>> (56 - 8 * i));
    }
    p.writePayload(b);
  }
}
