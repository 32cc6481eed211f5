package dev.kvcache.bench;

import dev.kvcache.codec.Filter;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.stream.Stream;

/** Buffers and sizes shared by the benchmarks. */
public final class Blocks {

  private Blocks() {}

  /** A direct buffer of {@code size} pseudo-random bytes, position 0, limit size. */
  public static ByteBuffer randomDirect(int size, long seed) {
    ByteBuffer b = ByteBuffer.allocateDirect(size);
    SplittableRandom random = new SplittableRandom(seed);
    while (b.remaining() >= 8) {
      b.putLong(random.nextLong());
    }
    while (b.hasRemaining()) {
      b.put((byte) random.nextInt());
    }
    return b.flip();
  }

  /** How many blocks make up the working set: at least 8, so reads are not served from L3. */
  static int blocksIn(long workingSetBytes, int blockSizeBytes) {
    return (int) Math.max(8, workingSetBytes / blockSizeBytes);
  }

  /**
   * The first {@code bytes} of {@code dataDir/name.bin} (the shared KV tensors) in a direct
   * buffer, or random bytes, with a message, when {@code name} is "random" or the file is absent.
   */
  public static ByteBuffer kvTensors(String dataDir, String name, int bytes) throws IOException {
    Path file = Path.of(dataDir, name + ".bin");
    if (!name.equals("random") && Files.isReadable(file)) {
      ByteBuffer b = ByteBuffer.allocateDirect(bytes);
      try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
        while (b.hasRemaining() && ch.read(b) >= 0) {
          // fill
        }
      }
      return b.flip();
    }
    if (!name.equals("random")) {
      System.out.println("\n" + file + " not found: using random bytes instead");
    }
    return randomDirect(bytes, 7);
  }

  /** {@code src} filtered chunk by chunk as the codec filters it; {@code src} itself for NONE. */
  static ByteBuffer filtered(ByteBuffer src, Filter filter, int chunkSizeBytes) {
    if (filter == Filter.NONE) {
      return src;
    }
    int length = src.remaining();
    ByteBuffer out = ByteBuffer.allocateDirect(length);
    byte[] plain = new byte[chunkSizeBytes];
    byte[] shuffled = new byte[chunkSizeBytes];
    for (int in = 0; in < length; in += chunkSizeBytes) {
      int len = Math.min(chunkSizeBytes, length - in);
      src.get(in, plain, 0, len);
      out.put(in, filter.apply(plain, len, shuffled), 0, len);
    }
    return out;
  }

  /** Deletes {@code dir} and everything under it, if it exists. */
  public static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) paths.sorted(Comparator.reverseOrder())::iterator) {
        Files.delete(p);
      }
    }
  }

  /** Copies the files of directory {@code from} (not recursively) into {@code to}, except {@code skip}. */
  static void copyTree(Path from, Path to, String skip) throws IOException {
    Files.createDirectories(to);
    try (Stream<Path> files = Files.list(from)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        if (!f.getFileName().toString().equals(skip)) {
          Files.copy(f, to.resolve(f.getFileName()));
        }
      }
    }
  }

  /** Bytes this process has caused to be sent to storage ({@code write_bytes} of /proc/self/io), or -1. */
  static long processBytesWritten() throws IOException {
    Path io = Path.of("/proc/self/io");
    if (!Files.isReadable(io)) {
      return -1;
    }
    for (String line : Files.readAllLines(io)) {
      if (line.startsWith("write_bytes:")) {
        return Long.parseLong(line.substring("write_bytes:".length()).trim());
      }
    }
    return -1;
  }
}
