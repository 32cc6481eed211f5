package dev.kvcache.s3.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import dev.kvcache.s3.internal.ObjectIndex.Entry;
import dev.kvcache.spi.Rendezvous;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** How the presence index divides a fleet's bucket: what it evicts, what it only forgets. */
class ObjectIndexTest {

  private static final int BLOCK = 1000;
  private static final Namespace NS = Namespace.of("m", "bf16", "tp0of1", "t");
  private static final List<String> THREE = List.of("a:1", "b:1", "c:1");

  private static List<BlockKey> keys(int n) {
    return IntStream.range(0, n).mapToObj(i -> BlockKey.of(NS, 7L * i + 1, 31L * i + 5)).toList();
  }

  private static ObjectNames.Folder folder() {
    return ObjectNames.folder(keys(1).get(0));
  }

  private static List<BlockKey> keys(Namespace ns, int from, int to) {
    return IntStream.range(from, to)
        .mapToObj(i -> BlockKey.ofRaw(ns, ByteBuffer.allocate(16).putInt(12, i).array())).toList();
  }

  /** Adds each key's object, and returns the keys of the objects evicted meanwhile. */
  private static List<BlockKey> addAll(ObjectIndex index, List<BlockKey> keys) {
    List<BlockKey> evicted = new ArrayList<>();
    for (BlockKey k : keys) {
      index.add(k, ObjectNames.folder(k), BLOCK).forEach(e -> evicted.add(e.key()));
    }
    return evicted;
  }

  @Test
  void aFolderAtItsQuotaEvictsItsOwnObjectsAndTheOthersBorrowWhatItLeaves() {
    Namespace flood = Namespace.of("m", "bf16", "tp0of1", "flood");
    Namespace kept = Namespace.of("m", "bf16", "tp0of1", "kept");
    Namespace other = Namespace.of("m", "bf16", "tp0of1", "other");
    ObjectIndex index = new ObjectIndex(20L * BLOCK, 1000, Fleet.ALONE, java.util.Map.of(
        ObjectNames.folder(flood).id(), 4L * BLOCK, ObjectNames.folder(kept).id(), 8L * BLOCK));

    List<BlockKey> others = keys(other, 0, 16); // 8 beyond the 8 the quotas leave: borrowed
    assertThat(addAll(index, others)).isEmpty();
    assertThat(addAll(index, keys(flood, 0, 40))).as("a flood at ten times its quota")
        .containsExactlyElementsOf(keys(flood, 0, 36));
    assertThat(index.ownedBytesOf(ObjectNames.folder(flood).id())).isEqualTo(4L * BLOCK);
    assertThat(index.ownedBytesOf(null)).as("the others keep what they borrowed")
        .isEqualTo(16L * BLOCK);

    List<BlockKey> evicted = addAll(index, keys(kept, 0, 8));
    assertThat(evicted).as("the quota's namespace takes its room back from the others' oldest")
        .containsExactlyElementsOf(others.subList(0, 8));
    assertThat(index.ownedBytesOf(ObjectNames.folder(kept).id())).isEqualTo(8L * BLOCK);
    assertThat(index.ownedBytes()).isEqualTo(20L * BLOCK);
    assertThat(addAll(index, keys(other, 100, 104))).as("the others at their room evict their own")
        .containsExactlyElementsOf(others.subList(8, 12));

    List<BlockKey> keptKeys = keys(kept, 0, 8);
    index.use(keptKeys.get(0)); // a use orders a quota's objects in its own order of use
    assertThat(addAll(index, keys(kept, 8, 10))).as("at its quota, its least recently used")
        .containsExactlyElementsOf(keptKeys.subList(1, 3));
    assertThat(index.ownedBytes()).isEqualTo(20L * BLOCK);
    assertThat(index.ownedBytesOf(ObjectNames.folder(kept).id())).isEqualTo(8L * BLOCK);
  }

  @Test
  void aServerAloneEvictsTheLeastRecentlyUsedPastTheCapacity() {
    ObjectIndex index = new ObjectIndex(4L * BLOCK, 100);
    List<BlockKey> k = keys(6);
    for (int i = 0; i < 4; i++) {
      assertThat(index.add(k.get(i), folder(), BLOCK)).isEmpty();
    }
    index.use(k.get(0));
    List<Entry> evicted = new ArrayList<>(index.add(k.get(4), folder(), BLOCK));
    evicted.addAll(index.add(k.get(5), folder(), BLOCK));
    assertThat(evicted).extracting(Entry::key).containsExactly(k.get(1), k.get(2));
    assertThat(index.ownedBytes()).isEqualTo(4L * BLOCK);
  }

  @Test
  void inAFleetOnlyTheOwnedObjectsCountAndAreEvictedAndOthersAreOnlyForgotten() {
    Fleet a = Fleet.of(THREE, "a:1");
    ObjectIndex index = new ObjectIndex(6L * BLOCK, 10, a); // a share of 2 blocks
    List<BlockKey> k = keys(40);
    List<BlockKey> mine = k.stream().filter(a::owns).toList();
    List<BlockKey> theirs = k.stream().filter(key -> !a.owns(key)).toList();
    assertThat(mine).hasSizeGreaterThan(4);
    assertThat(theirs).hasSizeGreaterThan(10);

    List<Entry> evicted = new ArrayList<>();
    for (BlockKey key : theirs.subList(0, 5)) {
      evicted.addAll(index.add(key, folder(), BLOCK));
    }
    assertThat(evicted).as("objects of others are not this server's to delete").isEmpty();
    assertThat(index.ownedBytes()).isZero();
    assertThat(index.bytes()).isEqualTo(5L * BLOCK);

    for (BlockKey key : mine.subList(0, 4)) {
      evicted.addAll(index.add(key, folder(), BLOCK));
    }
    assertThat(evicted).extracting(Entry::key).containsExactly(mine.get(0), mine.get(1));
    assertThat(index.ownedSize()).isEqualTo(2);

    // past the number of entries, the others' oldest are forgotten, not deleted
    evicted.clear();
    for (BlockKey key : theirs.subList(5, 11)) {
      evicted.addAll(index.add(key, folder(), BLOCK));
    }
    assertThat(evicted).isEmpty();
    assertThat(index.size()).isEqualTo(10);
    assertThat(index.peek(theirs.get(0))).isNull();
    assertThat(index.peek(mine.get(3))).isNotNull();
    // a listing does not add others' objects to a full index, but does add its own
    assertThat(index.listed(theirs.get(11), folder(), BLOCK)).isEmpty();
    assertThat(index.peek(theirs.get(11))).isNull();
    assertThat(index.listed(mine.get(4), folder(), BLOCK)).extracting(Entry::key)
        .containsExactly(mine.get(2));
  }

  @Test
  void whenTheFleetChangesOwnershipMovesWithTheOrderOfUseKept() {
    Fleet a3 = Fleet.of(THREE, "a:1");
    Fleet a2 = Fleet.of(List.of("a:1", "b:1"), "a:1");
    ObjectIndex index = new ObjectIndex(1000L * BLOCK, 1000, a3);
    List<BlockKey> k = keys(60);
    for (BlockKey key : k) {
      index.add(key, folder(), BLOCK);
    }
    long ownedBefore = k.stream().filter(a3::owns).count();
    assertThat(index.ownedSize()).isEqualTo(ownedBefore);
    // c leaves: a now owns its own keys and some of c's
    assertThat(index.reassign(a2)).isEmpty();
    long ownedAfter = k.stream().filter(a2::owns).count();
    assertThat(index.ownedSize()).isEqualTo(ownedAfter).isGreaterThan((int) ownedBefore);
    // with a capacity of 6 blocks, a's share goes from 2 blocks to 3 as c leaves: of the objects
    // a owns now, the most recently used stay
    ObjectIndex small = new ObjectIndex(6L * BLOCK, 1000, a3);
    for (BlockKey key : k) {
      small.add(key, folder(), BLOCK);
    }
    List<BlockKey> known = k.stream().filter(a2::owns).filter(key -> small.peek(key) != null)
        .toList(); // in order of use
    assertThat(known).hasSizeGreaterThan(4);
    small.use(known.get(0)); // the least recent becomes the most recent
    List<Entry> out = small.reassign(a2);
    assertThat(small.ownedSize()).isEqualTo(3);
    assertThat(small.ownedBytes()).isEqualTo(3L * BLOCK);
    List<BlockKey> kept = List.of(known.get(0), known.get(known.size() - 1),
        known.get(known.size() - 2));
    for (BlockKey key : kept) {
      assertThat(small.peek(key)).isNotNull();
    }
    assertThat(out).extracting(Entry::key).containsExactlyElementsOf(
        known.subList(1, known.size() - 2));
  }

  @Test
  void aServerNotInTheFleetOwnsNothingAndOneAloneOwnsAll() {
    Fleet outside = Fleet.of(THREE, "d:1");
    assertThat(outside.member()).isFalse();
    assertThat(keys(50)).noneMatch(outside::owns);
    assertThat(keys(50)).allMatch(Fleet.ALONE::owns);
    // every key has exactly one owner among the members: the server the clients send it to
    List<Fleet> each = THREE.stream().map(s -> Fleet.of(THREE, s)).toList();
    List<Long> ids = THREE.stream().map(Rendezvous::serverId).toList();
    for (BlockKey key : keys(200)) {
      assertThat(each.stream().filter(f -> f.owns(key)).count()).isEqualTo(1);
      assertThat(each.get(Rendezvous.pick(key, ids)).owns(key)).isTrue();
    }
  }
}
