package dev.kvcache.jlama;

import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.BFloat16BufferTensor;
import com.github.tjake.jlama.tensor.FloatBufferTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import com.github.tjake.jlama.tensor.TensorShape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Copies blocks between a Jlama session's KV buffer and the bytes of the cache ({@link
 * KvLayout}): one copy each way, a run of a block's tokens at a time (as many as one of the
 * buffer's pages holds), between the page and a tensor that views the cache's bytes.
 */
final class KvBlocks {

  private KvBlocks() {}

  /** Copies block {@code block}'s keys and values from {@code kv} into {@code dst}'s bytes. */
  static void read(KvLayout layout, KvBufferCache.KvBuffer kv, int block, ByteBuffer dst) {
    copy(layout, kv, block, dst, false);
  }

  /** Copies {@code src}'s bytes into block {@code block}'s keys and values in {@code kv}. */
  static void write(KvLayout layout, ByteBuffer src, int block, KvBufferCache.KvBuffer kv) {
    copy(layout, kv, block, src, true);
  }

  private static void copy(KvLayout layout, KvBufferCache.KvBuffer kv, int block,
      ByteBuffer bytes, boolean intoKv) {
    if (!bytes.isDirect()) {
      throw new IllegalArgumentException("Jlama's tensors view direct buffers only");
    }
    if (bytes.remaining() < layout.blockBytes()) {
      throw new IllegalArgumentException("a block is " + layout.blockBytes() + " bytes, not "
          + bytes.remaining());
    }
    int first = block * layout.blockTokens();
    int end = first + layout.blockTokens();
    int at = bytes.position();
    for (int layer = 0; layer < layout.layers(); layer++) {
      for (int part = 0; part < 2; part++) {
        // the pages of this layer's keys (or values) up to the block's last token: [tokens, kvLength]
        AbstractTensor[] pages = part == 0 ? kv.getKeyTensorsUptoPosition(layer, end - 1)
            : kv.getValTensorsUptoPosition(layer, end - 1);
        int perPage = pages[0].shape().first();
        for (int pos = first; pos < end; ) {
          int inPage = pos % perPage;
          int n = Math.min(end - pos, perPage - inPage);
          AbstractTensor view = view(layout, bytes, at, n);
          int values = n * layout.kvLength();
          if (intoKv) {
            pages[pos / perPage].copyFrom(view, 0, inPage * layout.kvLength(), values);
          } else {
            view.copyFrom(pages[pos / perPage], inPage * layout.kvLength(), 0, values);
          }
          at += n * layout.tokenBytes();
          pos += n;
        }
      }
    }
  }

  /** A tensor of {@code tokens} tokens' values over {@code bytes} from {@code at}. */
  private static AbstractTensor view(KvLayout layout, ByteBuffer bytes, int at, int tokens) {
    ByteBuffer slice = bytes.slice(at, tokens * layout.tokenBytes()).order(ByteOrder.LITTLE_ENDIAN);
    TensorShape shape = TensorShape.of(tokens, layout.kvLength());
    return layout.dtype() == DType.F32
        ? new FloatBufferTensor("kvcache", slice.asFloatBuffer(), shape, false)
        : new BFloat16BufferTensor("kvcache", slice.asShortBuffer(), shape, false);
  }
}
