package dev.kvcache.s3.internal;

import dev.kvcache.BlockKey;
import dev.kvcache.s3.internal.ObjectNames.Folder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;

/**
 * The objects the tier knows are in the bucket, in order of use (least recent first), with the
 * bytes they hold: filled by the tier's own writes and reads and by listings of the bucket. It
 * holds at most a set number of entries (about 110 bytes of heap each) and bytes; adding past
 * either bound takes the least recently used entries out and returns them, for the tier to delete
 * their objects. Thread-safe.
 */
public final class ObjectIndex {

  /** What the index knows of one object. */
  public static final class Entry {
    private final BlockKey key;
    private final Folder folder;
    private final int length;
    /** The listing under way when the entry was made or last seen by a listing. */
    private int listing;
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

  /** The most uses from above waiting to be applied. */
  private static final int TOUCHES = 4096;

  private final HashMap<BlockKey, Entry> entries = new HashMap<>(1024);
  /** Uses of keys reported from above, applied to the order of use at the next change. */
  private final ArrayBlockingQueue<BlockKey> touches = new ArrayBlockingQueue<>(TOUCHES);
  private final long capacityBytes;
  private final int maxEntries;
  /** The least recently used entry, and the most. */
  private Entry oldest;
  private Entry newest;
  private long bytes;
  private int listing;

  public ObjectIndex(long capacityBytes, int maxEntries) {
    this.capacityBytes = capacityBytes;
    this.maxEntries = maxEntries;
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
        unlink(e);
        linkNewest(e);
      }
    }
  }

  /** The entry of a key, marking it used; null if the index does not know the key. */
  public synchronized Entry use(BlockKey key) {
    applyUses();
    Entry e = entries.get(key);
    if (e != null) {
      unlink(e);
      linkNewest(e);
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
    entries.put(key, e);
    linkNewest(e);
    bytes += length;
    List<Entry> evicted = new ArrayList<>();
    while ((bytes > capacityBytes || entries.size() > maxEntries) && oldest != e) {
      Entry cold = oldest;
      remove(cold.key);
      evicted.add(cold);
    }
    return evicted;
  }

  /**
   * Records an object a listing found. An object the index knows keeps its place in the order of
   * use; one it does not know is added as the most recently used if it fits the bounds (a listing
   * finds what other servers wrote lately).
   *
   * @return whether the object is in the index now
   */
  public synchronized boolean listed(BlockKey key, Folder folder, int length) {
    Entry old = entries.get(key);
    if (old != null) {
      old.listing = listing;
      return true;
    }
    if (bytes + length > capacityBytes || entries.size() >= maxEntries) {
      return false;
    }
    Entry e = new Entry(key, folder, length, listing);
    entries.put(key, e);
    linkNewest(e);
    bytes += length;
    return true;
  }

  /** Removes a key's entry; null if the index did not know it. */
  public synchronized Entry remove(BlockKey key) {
    Entry old = entries.remove(key);
    if (old != null) {
      unlink(old);
      bytes -= old.length;
    }
    return old;
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
    for (Entry e = oldest; e != null; ) {
      Entry next = e.newer;
      if (e.listing < number) {
        remove(e.key);
        dropped++;
      }
      e = next;
    }
    return dropped;
  }

  /** The number of objects. */
  public synchronized int size() {
    return entries.size();
  }

  /** The bytes the objects hold. */
  public synchronized long bytes() {
    return bytes;
  }

  private void linkNewest(Entry e) {
    e.older = newest;
    e.newer = null;
    if (newest != null) {
      newest.newer = e;
    } else {
      oldest = e;
    }
    newest = e;
  }

  private void unlink(Entry e) {
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
  }
}
