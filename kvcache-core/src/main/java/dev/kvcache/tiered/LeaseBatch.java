package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * A batch read's leases, one per key in order: from above where a tier there holds the block, the
 * others read below in one call. Every lease taken is closed if the read fails.
 */
final class LeaseBatch {

  private LeaseBatch() {}

  /**
   * Reads {@code keys}, none of them null.
   *
   * @param above the lease of key {@code i} from above; null to read it below
   * @param below reads the keys left, in one call, a lease per key in order
   * @param fromBelow what a lease read below becomes, given the key's index
   */
  static List<BlockLease> read(List<BlockKey> keys, IntFunction<BlockLease> above,
      Function<List<BlockKey>, List<BlockLease>> below,
      BiFunction<Integer, BlockLease, BlockLease> fromBelow) {
    BlockLease[] result = new BlockLease[keys.size()];
    try {
      List<Integer> left = new ArrayList<>();
      for (int i = 0; i < result.length; i++) {
        result[i] = above.apply(i);
        if (result[i] == null) {
          left.add(i);
        }
      }
      if (!left.isEmpty()) {
        List<BlockKey> belowKeys = new ArrayList<>(left.size());
        for (int i : left) {
          belowKeys.add(keys.get(i));
        }
        List<BlockLease> read = below.apply(belowKeys);
        for (int j = 0; j < left.size(); j++) {
          result[left.get(j)] = fromBelow.apply(left.get(j), read.get(j));
        }
      }
      return Arrays.asList(result);
    } catch (RuntimeException | Error e) {
      for (BlockLease lease : result) {
        if (lease != null) {
          lease.close();
        }
      }
      throw e;
    }
  }
}
