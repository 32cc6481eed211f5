package dev.kvcache.bench.trace;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.github.luben.zstd.ZstdInputStream;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A request trace in Mooncake's form: one JSON object per line, whose {@code hash_ids} are the
 * chained prefix ids of the request's 512-token blocks (an id stands for its block and every block
 * before it). Read from {@code .jsonl} or zstd-compressed {@code .jsonl.zst}.
 *
 * @param name the file name without its extensions
 * @param requests each request's block ids, in arrival order
 */
public record MooncakeTrace(String name, int[][] requests) {

  /** Tokens per block in Mooncake's traces. */
  public static final int BLOCK_TOKENS = 512;

  /**
   * Reads a trace file.
   *
   * @throws IOException if the file cannot be read or a line is not a request with {@code hash_ids}
   */
  public static MooncakeTrace load(Path file) throws IOException {
    String fileName = file.getFileName().toString();
    boolean zstd = fileName.endsWith(".zst");
    String name = fileName.replaceFirst("\\.jsonl(\\.zst)?$", "");
    List<int[]> requests = new ArrayList<>();
    JsonFactory json = new JsonFactory();
    try (InputStream raw = new BufferedInputStream(Files.newInputStream(file), 1 << 16);
        InputStream in = zstd ? new ZstdInputStream(raw) : raw;
        JsonParser parser = json.createParser(in)) {
      for (JsonToken t = parser.nextToken(); t != null; t = parser.nextToken()) {
        if (t != JsonToken.START_OBJECT) {
          throw new IOException(file + ": expected a request object at " + parser.currentLocation());
        }
        int[] ids = null;
        while (parser.nextToken() == JsonToken.FIELD_NAME) {
          String field = parser.currentName();
          JsonToken value = parser.nextToken();
          if ("hash_ids".equals(field) && value == JsonToken.START_ARRAY) {
            ids = readIds(parser);
          } else {
            parser.skipChildren();
          }
        }
        if (ids == null) {
          throw new IOException(file + ": request " + (requests.size() + 1) + " has no hash_ids");
        }
        requests.add(ids);
      }
    }
    return new MooncakeTrace(name, requests.toArray(new int[0][]));
  }

  private static int[] readIds(JsonParser parser) throws IOException {
    int[] ids = new int[16];
    int n = 0;
    while (parser.nextToken() == JsonToken.VALUE_NUMBER_INT) {
      if (n == ids.length) {
        ids = Arrays.copyOf(ids, n * 2);
      }
      ids[n++] = parser.getIntValue();
    }
    return Arrays.copyOf(ids, n);
  }

  /**
   * This trace {@code copies} times in a row, the ids of copy {@code c} (from 0) moved up by
   * {@code c * (maxId() + 1)}: the same workload again, sharing no block with the copies before.
   *
   * @throws IllegalArgumentException if {@code copies} is less than 1 or the ids would overflow
   */
  public MooncakeTrace repeated(int copies) {
    if (copies < 1) {
      throw new IllegalArgumentException("copies must be at least 1, got " + copies);
    }
    if (copies == 1) {
      return this;
    }
    long stride = maxId() + 1L;
    if (stride * copies > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          copies + " copies of ids up to " + maxId() + " overflow an int");
    }
    int[][] all = new int[requests.length * copies][];
    for (int c = 0; c < copies; c++) {
      int offset = (int) (stride * c);
      for (int r = 0; r < requests.length; r++) {
        int[] ids = requests[r].clone();
        for (int i = 0; i < ids.length; i++) {
          ids[i] += offset;
        }
        all[c * requests.length + r] = ids;
      }
    }
    return new MooncakeTrace(name, all);
  }

  /** {@link #nextUses()} of an access whose block is not used again. */
  public static final int NEVER = Integer.MAX_VALUE;

  /**
   * For each block access, in trace order (request by request, block by block), the position of
   * the next access of the same block, or {@link #NEVER}.
   */
  public int[] nextUses() {
    int accesses = Math.toIntExact(blockAccesses());
    int[] nextUse = new int[accesses];
    int[] seenAt = new int[maxId() + 1];
    Arrays.fill(seenAt, NEVER);
    int pos = accesses;
    for (int r = requests.length - 1; r >= 0; r--) {
      int[] ids = requests[r];
      for (int j = ids.length - 1; j >= 0; j--) {
        pos--;
        nextUse[pos] = seenAt[ids[j]];
        seenAt[ids[j]] = pos;
      }
    }
    return nextUse;
  }

  /** The largest block id in the trace, or 0 for an empty trace. */
  public int maxId() {
    return Arrays.stream(requests).flatMapToInt(Arrays::stream).max().orElse(0);
  }

  /** Block accesses in the whole trace. */
  public long blockAccesses() {
    long n = 0;
    for (int[] r : requests) {
      n += r.length;
    }
    return n;
  }

  /** Distinct block ids that occur exactly once in the trace. */
  public int blocksUsedOnce() {
    Map<Integer, Integer> counts = new HashMap<>();
    for (int[] r : requests) {
      for (int id : r) {
        counts.merge(id, 1, Integer::sum);
      }
    }
    return (int) counts.values().stream().filter(c -> c == 1).count();
  }

  /**
   * The median number of block accesses between two accesses of the same block, over all
   * accesses that reuse one; 0 if nothing is reused.
   */
  public long medianReuseDistance() {
    Map<Integer, Long> lastSeen = new HashMap<>();
    List<Long> distances = new ArrayList<>();
    long position = 0;
    for (int[] r : requests) {
      for (int id : r) {
        Long last = lastSeen.put(id, position);
        if (last != null) {
          distances.add(position - last);
        }
        position++;
      }
    }
    if (distances.isEmpty()) {
      return 0;
    }
    distances.sort(null);
    return distances.get(distances.size() / 2);
  }

  /** Distinct block ids in the trace. */
  public int distinctBlocks() {
    return (int) Arrays.stream(requests).flatMapToInt(Arrays::stream).distinct().count();
  }
}
