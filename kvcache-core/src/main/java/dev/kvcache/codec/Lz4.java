package dev.kvcache.codec;

import net.jpountz.lz4.LZ4Compressor;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.lz4.LZ4SafeDecompressor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The LZ4 implementation every codec uses: the fastest lz4-java has (the native one when its
 * library loads, else pure Java; which one is logged once). Decompression always uses the safe
 * decompressor, which never reads or writes out of bounds on malformed input.
 */
final class Lz4 {

  private static final Logger log = LoggerFactory.getLogger(Lz4.class);
  private static final LZ4Factory FACTORY = load();
  static final LZ4SafeDecompressor DECOMPRESSOR = FACTORY.safeDecompressor();
  private static final LZ4Compressor BOUND = FACTORY.fastCompressor();

  private Lz4() {}

  private static LZ4Factory load() {
    LZ4Factory factory = LZ4Factory.fastestInstance();
    log.info("LZ4 implementation: {}", factory);
    return factory;
  }

  static LZ4Compressor compressor() {
    return FACTORY.fastCompressor();
  }

  /** LZ4's worst-case output for {@code rawLength} input bytes. */
  static int maxCompressedLength(int rawLength) {
    return BOUND.maxCompressedLength(rawLength);
  }
}
