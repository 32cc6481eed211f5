package dev.kvcache.server.api;

import dev.kvcache.PrefixPin;
import dev.kvcache.server.errors.ApiException;
import io.micronaut.context.annotation.Value;
import io.micronaut.http.HttpStatus;
import io.micronaut.scheduling.annotation.Scheduled;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The prefix pins handed out by pinned lookups, by lease id. A pin lets go of its blocks when its
 * client releases it or its time is up; a sweep forgets the ids of expired pins every second. The
 * number of pins open at once is bounded, in all ({@code kvcache.max-pins}) and per namespace
 * ({@code kvcache.max-pins-per-namespace}), so that no tenant can hold every pin, and with them
 * RAM from eviction, for all.
 */
@Singleton
public class PinRegistry {

  /**
   * A registered pin.
   *
   * @param lease the pin's random id
   * @param copyToken for a pin handed to a client on this host: the random token that the client
   *     writes into a file to show that it may write there, before the server copies the pin's
   *     blocks into it ({@code local.LeaseCopies}); null for other pins. Not to be changed.
   */
  public record Entry(String lease, String namespace, PrefixPin pin, byte[] copyToken) {}

  /** Bytes of a lease's copy token ({@link Entry#copyToken}). */
  static final int COPY_TOKEN_BYTES = 16;

  private final Map<String, Entry> pins = new ConcurrentHashMap<>();
  /** Pins registered and not yet forgotten, by namespace. */
  private final Map<String, Integer> perNamespace = new ConcurrentHashMap<>();
  private final SecureRandom random = new SecureRandom();
  private final int maxPins;
  private final int maxPerNamespace;

  PinRegistry(@Value("${kvcache.max-pins:10000}") int maxPins,
      @Value("${kvcache.max-pins-per-namespace:2500}") int maxPerNamespace) {
    if (maxPins < 1 || maxPerNamespace < 1) {
      throw new IllegalArgumentException("kvcache.max-pins (" + maxPins
          + ") and kvcache.max-pins-per-namespace (" + maxPerNamespace + ") must be positive");
    }
    this.maxPins = maxPins;
    this.maxPerNamespace = maxPerNamespace;
  }

  /**
   * Registers a pin under a new random id, with a copy token if {@code copyable}.
   *
   * @throws ApiException 503 if too many pins are open, in all or in the namespace
   */
  public Entry register(String namespace, PrefixPin pin, boolean copyable) {
    if (pins.size() >= maxPins) {
      pin.close();
      throw new ApiException(HttpStatus.SERVICE_UNAVAILABLE, "too-many-pins",
          maxPins + " pinned lookups are open; fetch or release some, or look up without a pin");
    }
    boolean[] room = {false};
    perNamespace.compute(namespace, (ns, n) -> {
      int open = n == null ? 0 : n;
      room[0] = open < maxPerNamespace;
      return room[0] ? open + 1 : n;
    });
    if (!room[0]) {
      pin.close();
      throw new ApiException(HttpStatus.SERVICE_UNAVAILABLE, "too-many-pins",
          maxPerNamespace + " pinned lookups of namespace '" + namespace + "' are open"
              + " (kvcache.max-pins-per-namespace); fetch or release some, or look up without a pin");
    }
    byte[] id = new byte[16];
    random.nextBytes(id);
    byte[] token = null;
    if (copyable) {
      token = new byte[COPY_TOKEN_BYTES];
      random.nextBytes(token);
    }
    Entry e = new Entry(HexFormat.of().formatHex(id), namespace, pin, token);
    pins.put(e.lease(), e);
    return e;
  }

  /**
   * The live pin with this id in this namespace.
   *
   * @throws ApiException 404 if there is none (never was, released or expired)
   */
  public Entry find(String namespace, String lease) {
    Entry e = pins.get(lease);
    if (e == null || !e.namespace().equals(namespace) || e.pin().isReleased()) {
      throw new ApiException(HttpStatus.NOT_FOUND, "no-lease",
          "no open lease " + lease + " in namespace " + namespace + " (released or expired?)");
    }
    return e;
  }

  /** Releases a pin; false if there was none. */
  public boolean release(String namespace, String lease) {
    Entry e = pins.get(lease);
    if (e == null || !e.namespace().equals(namespace) || !pins.remove(lease, e)) {
      return false;
    }
    forgot(e);
    e.pin().close();
    return true;
  }

  /** Counts {@code e}, just removed, out of its namespace's pins. */
  private void forgot(Entry e) {
    perNamespace.computeIfPresent(e.namespace(), (ns, n) -> n > 1 ? n - 1 : null);
  }

  int open() {
    return pins.size();
  }

  @Scheduled(fixedDelay = "1s")
  void forgetExpired() {
    for (Entry e : pins.values()) {
      if (e.pin().isReleased() && pins.remove(e.lease(), e)) {
        forgot(e);
      }
    }
  }

  @PreDestroy
  public void releaseAll() {
    pins.values().forEach(e -> e.pin().close());
    pins.clear();
    perNamespace.clear();
  }
}
