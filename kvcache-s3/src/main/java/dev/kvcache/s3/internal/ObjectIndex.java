package dev.kvcache.s3.internal;

import dev.kvcache.BlockKey;
import dev.kvcache.s3.internal.ObjectNames.Folder;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;

/**
 * The objects the tier knows are in the bucket, in order of use, with the bytes they hold: filled
 * by the tier's own writes and reads and by listings of the bucket.
 *
 * <p>Of a fleet's bucket, each server evicts the objects it owns ({@link Fleet}): the index keeps
 * the objects this server owns in one order of use and the others in another. The bytes of the
 * objects it owns are held to its share of the capacity; past it, the least recently used are
 * taken out and returned, for the tier to delete. The index holds at most a set number of entries
 * (about 120 bytes of heap each): past it, it forgets the least recently used objects it does not
 * own, and only then takes out objects it owns. Thread-safe.
 *
 * <p>With quotas per namespace folder (whole-bucket bytes, of which each server holds its share as
 * it does of the capacity), the objects this server owns of a folder with a quota have an order of
 * use of their own, held to the quota's share: past it, that folder's least recently used are
 * taken out, never another's. The others it owns share one order, held to the capacity's share
 * less what the quotas' objects take: they borrow a quota's unused room, and give it back, least
 * recently used first, when the quota's namespace needs it.
 */
public final class ObjectIndex {

  /** What the index knows of one object. */
  public static final class Entry {
    private final BlockKey key;
    private final Folder folder;
    private final int length;
    /** The listing under way when the entry was made or last seen by a listing. */
    private int listing;
    /** When it was last used, on the index's clock: orders the two lists into one. */
    private long used;
    private boolean owned;
    private Entry older;
    private Entry newer;

    private Entry(BlockKey key, Folder folder, int length, int listing) {
      this.key = key;
      this.folder = folder;
      this.length = length;
      this.listing = listing;
    }

    /** The object's key. */
    public BlockKey key() {
      return key;
    }

    /** The namespace folder it is in. */
    public Folder folder() {
      return folder;
    }

    /** Its length in bytes. */
    public int length() {
      return length;
    }
  }

  /** Entries in order of use, least recent first, with their bytes. */
  private static final class Order {
    private Entry oldest;
    private Entry newest;
    private long bytes;
    private int size;

    void linkNewest(Entry e) {
      e.older = newest;
      e.newer = null;
      if (newest != null) {
        newest.newer = e;
      } else {
        oldest = e;
      }
      newest = e;
      bytes += e.length;
      size++;
    }

    void unlink(Entry e) {
      if (e.older != null) {
        e.older.newer = e.newer;
      } else {
        oldest = e.newer;
      }
      if (e.newer != null) {
        e.newer.older = e.older;
      } else {
        newest = e.older;
      }
      e.older = null;
      e.newer = null;
      bytes -= e.length;
      size--;
    }
  }

  /** The most uses from above waiting to be applied. */
  private static final int TOUCHES = 4096;

  private final HashMap<BlockKey, Entry> entries = new HashMap<>(1024);
  /** Uses of keys reported from above, applied to the order of use at the next change. */
  private final ArrayBlockingQueue<BlockKey> touches = new ArrayBlockingQueue<>(TOUCHES);
  private final long capacityBytes;
  private final int maxEntries;
  /** The objects this server owns of folders without a quota. */
  private final Order owned = new Order();
  /** The objects this server owns of each folder with a quota, by folder id. */
  private final Map<String, Order> quotaOrders = new HashMap<>();
  /** The quotas by folder id, of the whole bucket. */
  private final Map<String, Long> quotas;
  private final Order others = new Order();
  private Fleet fleet;
  private long budget;
  private long clock;
  private int listing;

  /** An index of a server alone, which owns every object. */
  public ObjectIndex(long capacityBytes, int maxEntries) {
    this(capacityBytes, maxEntries, Fleet.ALONE);
  }

  /**
   * @param capacityBytes the bucket's capacity, of which the index holds this server's share
   * @param fleet the servers sharing the bucket
   */
  public ObjectIndex(long capacityBytes, int maxEntries, Fleet fleet) {
    this(capacityBytes, maxEntries, fleet, Map.of());
  }

  /**
   * @param capacityBytes the bucket's capacity, of which the index holds this server's share
   * @param fleet the servers sharing the bucket
   * @param quotas the bytes of the bucket the objects of each of these folders (by id) may hold
   *     at most, of which the index holds this server's share
   */
  public ObjectIndex(long capacityBytes, int maxEntries, Fleet fleet, Map<String, Long> quotas) {
    this.quotas = Map.copyOf(quotas);
    for (String folder : quotas.keySet()) {
      quotaOrders.put(folder, new Order());
    }
    this.capacityBytes = capacityBytes;
    this.maxEntries = maxEntries;
    this.fleet = fleet;
    this.budget = fleet.share(capacityBytes);
  }

  /**
   * An entry for an object the index does not hold, such as one a listing let go of for want of
   * room, for the tier to evict.
   */
  public static Entry unindexed(BlockKey key, Folder folder, int length) {
    return new Entry(key, folder, length, 0);
  }

  /** The most entries the index holds. */
  public int maxEntries() {
    return maxEntries;
  }

  /** Whether this server owns the key's object, in the fleet the index knows now. */
  public synchronized boolean owns(BlockKey key) {
    return fleet.owns(key);
  }

  /**
   * Notes a use of the key without waiting for the index: it is applied at the index's next
   * change, or dropped if uses come faster than changes.
   */
  public void useLater(BlockKey key) {
    touches.offer(key);
  }

  /** Applies the uses noted by {@link #useLater}. */
  public synchronized void applyUses() {
    for (BlockKey key; (key = touches.poll()) != null; ) {
      Entry e = entries.get(key);
      if (e != null) {
        touch(e);
      }
    }
  }

  /** The entry of a key, marking it used; null if the index does not know the key. */
  public synchronized Entry use(BlockKey key) {
    applyUses();
    Entry e = entries.get(key);
    if (e != null) {
      touch(e);
    }
    return e;
  }

  /** The entry of a key, its order of use unchanged; null if the index does not know the key. */
  public synchronized Entry peek(BlockKey key) {
    return entries.get(key);
  }

  /**
   * Records an object as the most recently used and takes out, least recent first, as many other
   * entries as the bounds require.
   *
   * @return the entries taken out; their objects are to be deleted
   */
  public synchronized List<Entry> add(BlockKey key, Folder folder, int length) {
    applyUses();
    remove(key);
    Entry e = new Entry(key, folder, length, listing);
    insert(e, fleet.owns(key));
    return trim(e);
  }

  /**
   * Records an object a listing found. An object the index knows keeps its place in the order of
   * use; one it does not know is added as the most recently used (a listing finds what other
   * servers wrote lately), and if this server owns it, it counts toward its share of the capacity.
   * An object this server does not own is not added to an index that is full.
   *
   * @return the entries taken out to make room; their objects are to be deleted
   */
  public synchronized List<Entry> listed(BlockKey key, Folder folder, int length) {
    Entry old = entries.get(key);
    if (old != null) {
      old.listing = listing;
      return List.of();
    }
    boolean owns = fleet.owns(key);
    if (!owns && entries.size() >= maxEntries) {
      return List.of();
    }
    Entry e = new Entry(key, folder, length, listing);
    insert(e, owns);
    return trim(e);
  }

  /**
   * Divides the objects anew after the fleet changed: each object's owner is found again, its
   * place in the order of use kept.
   *
   * @return the entries taken out because this server's share no longer holds them
   */
  public synchronized List<Entry> reassign(Fleet now) {
    applyUses();
    if (now.equals(fleet)) {
      return List.of();
    }
    fleet = now;
    budget = now.share(capacityBytes);
    List<Entry> all = new ArrayList<>(entries.values());
    all.sort(Comparator.comparingLong(e -> e.used));
    for (Entry e : all) {
      orderOf(e).unlink(e);
    }
    for (Entry e : all) {
      e.owned = now.owns(e.key);
      orderOf(e).linkNewest(e);
    }
    return trim(null);
  }

  /** Removes a key's entry; null if the index did not know it. */
  public synchronized Entry remove(BlockKey key) {
    Entry old = entries.remove(key);
    if (old != null) {
      orderOf(old).unlink(old);
    }
    return old;
  }

  /**
   * Removes the entries of every object in a folder (a namespace dropped whole).
   *
   * @return the keys of the entries removed
   */
  public synchronized List<BlockKey> removeFolder(String folderId) {
    List<BlockKey> gone = new ArrayList<>();
    for (Entry e : entries.values()) {
      if (e.folder.id().equals(folderId)) {
        gone.add(e.key);
      }
    }
    gone.forEach(this::remove);
    return gone;
  }

  /** Starts a listing: returns its number, for {@link #endListing}. */
  public synchronized int startListing() {
    return ++listing;
  }

  /**
   * Ends a listing that went through the whole bucket: entries made before it started and not
   * seen by it are objects deleted meanwhile (by another server, or a lifecycle rule).
   *
   * @return how many entries were dropped
   */
  public synchronized int endListing(int number) {
    int dropped = 0;
    List<Order> orders = new ArrayList<>(quotaOrders.values());
    orders.add(owned);
    orders.add(others);
    for (Order order : orders) {
      for (Entry e = order.oldest; e != null; ) {
        Entry next = e.newer;
        if (e.listing < number) {
          remove(e.key);
          dropped++;
        }
        e = next;
      }
    }
    return dropped;
  }

  /** The number of objects. */
  public synchronized int size() {
    return entries.size();
  }

  /** The bytes the objects hold. */
  public synchronized long bytes() {
    return ownedBytes() + others.bytes;
  }

  /** The number of objects this server owns. */
  public synchronized int ownedSize() {
    int size = owned.size;
    for (Order q : quotaOrders.values()) {
      size += q.size;
    }
    return size;
  }

  /** The bytes of the objects this server owns. */
  public synchronized long ownedBytes() {
    long bytes = owned.bytes;
    for (Order q : quotaOrders.values()) {
      bytes += q.bytes;
    }
    return bytes;
  }

  /**
   * The bytes of the objects this server owns that count against the quota of folder {@code
   * folderId}; for a folder without a quota (or null), those of every folder without one.
   */
  public synchronized long ownedBytesOf(String folderId) {
    Order q = folderId == null ? null : quotaOrders.get(folderId);
    return q != null ? q.bytes : owned.bytes;
  }

  /** The order an entry is in: of the objects owned, its quota's or the shared one. */
  private Order orderOf(Entry e) {
    if (!e.owned) {
      return others;
    }
    Order q = quotaOrders.get(e.folder.id());
    return q != null ? q : owned;
  }

  /** The servers the index divides the objects between. */
  public synchronized Fleet fleet() {
    return fleet;
  }

  private void insert(Entry e, boolean owns) {
    e.owned = owns;
    e.used = ++clock;
    entries.put(e.key, e);
    orderOf(e).linkNewest(e);
  }

  private void touch(Entry e) {
    Order order = orderOf(e);
    order.unlink(e);
    e.used = ++clock;
    order.linkNewest(e);
  }

  /**
   * Takes out entries, least recent first, until the bounds hold, never {@code keep}: objects of a
   * folder with a quota past the quota's share, then objects this server owns past its share of
   * the capacity ({@link #ownedVictim}) (returned, to be deleted); then, past the number of
   * entries, objects it does not own (forgotten), then objects it owns (returned).
   */
  private List<Entry> trim(Entry keep) {
    List<Entry> evicted = new ArrayList<>();
    for (Map.Entry<String, Order> q : quotaOrders.entrySet()) {
      Order order = q.getValue();
      long share = fleet.share(quotas.get(q.getKey()));
      while (order.bytes > share && order.oldest != null && order.oldest != keep) {
        evicted.add(remove(order.oldest.key));
      }
    }
    for (Entry victim; ownedBytes() > budget && (victim = ownedVictim(keep)) != null; ) {
      evicted.add(remove(victim.key));
    }
    while (entries.size() > maxEntries) {
      Entry victim = others.oldest != null && others.oldest != keep ? others.oldest
          : ownedVictim(keep);
      if (victim == null) {
        break;
      }
      if (victim.owned) {
        evicted.add(victim);
      }
      remove(victim.key);
    }
    return evicted;
  }

  /**
   * The object this server owns to take out for room, never {@code keep}: the least recently used
   * of the folders without a quota; when they hold none, that of a quota's folder over its share,
   * and last that of the folder {@code keep} is in; null if none.
   */
  private Entry ownedVictim(Entry keep) {
    if (owned.oldest != null && owned.oldest != keep) {
      return owned.oldest;
    }
    for (Map.Entry<String, Order> q : quotaOrders.entrySet()) {
      Entry oldest = q.getValue().oldest;
      if (oldest != null && oldest != keep
          && q.getValue().bytes > fleet.share(quotas.get(q.getKey()))) {
        return oldest;
      }
    }
    if (keep != null && keep.owned) {
      Entry oldest = orderOf(keep).oldest;
      return oldest != keep ? oldest : oldest.newer;
    }
    return null;
  }
}
