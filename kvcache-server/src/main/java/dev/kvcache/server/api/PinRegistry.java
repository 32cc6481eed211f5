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
 * number of pins open at once is bounded ({@code kvcache.max-pins}).
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
  private final SecureRandom random = new SecureRandom();
  private final int maxPins;

  PinRegistry(@Value("${kvcache.max-pins:10000}") int maxPins) {
    this.maxPins = maxPins;
  }

  /**
   * Registers a pin under a new random id, with a copy token if {@code copyable}.
   *
   * @throws ApiException 503 if too many pins are open
   */
  public Entry register(String namespace, PrefixPin pin, boolean copyable) {
    if (pins.size() >= maxPins) {
      pin.close();
      throw new ApiException(HttpStatus.SERVICE_UNAVAILABLE, "too-many-pins",
          maxPins + " pinned lookups are open; fetch or release some, or look up without a pin");
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
    e.pin().close();
    return true;
  }

  int open() {
    return pins.size();
  }

  @Scheduled(fixedDelay = "1s")
  void forgetExpired() {
    pins.values().removeIf(e -> e.pin().isReleased());
  }

  @PreDestroy
  public void releaseAll() {
    pins.values().forEach(e -> e.pin().close());
    pins.clear();
  }
}
