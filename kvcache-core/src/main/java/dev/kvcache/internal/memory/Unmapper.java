package dev.kvcache.internal.memory;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Unmaps a mapped buffer at once (through {@code sun.misc.Unsafe.invokeCleaner}, available on JDK 9
 * and later), rather than when the garbage collector finds it, so that a dropped file's space
 * (a disk tier's super-block, a client's file in {@code /dev/shm}) comes back promptly. Where that is not available, the mapping is left to the collector.
 * Callers guarantee that nothing reads the buffer afterwards: reading an unmapped buffer crashes
 * the JVM.
 */
public final class Unmapper {

  private static final Logger log = LoggerFactory.getLogger(Unmapper.class);
  private static final Object UNSAFE;
  private static final Method INVOKE_CLEANER;

  static {
    Object unsafe = null;
    Method invokeCleaner = null;
    try {
      Class<?> c = Class.forName("sun.misc.Unsafe");
      Field f = c.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      unsafe = f.get(null);
      invokeCleaner = c.getMethod("invokeCleaner", ByteBuffer.class);
    } catch (ReflectiveOperationException | RuntimeException e) {
      log.info("mapped files are unmapped by the garbage collector ({})", e.toString());
    }
    UNSAFE = unsafe;
    INVOKE_CLEANER = invokeCleaner;
  }

  private Unmapper() {}

  /** Unmaps {@code mapped} now, if this JDK allows it; nothing may read it afterwards. */
  public static void unmap(ByteBuffer mapped) {
    if (INVOKE_CLEANER == null) {
      return;
    }
    try {
      INVOKE_CLEANER.invoke(UNSAFE, mapped);
    } catch (ReflectiveOperationException | RuntimeException e) {
      log.debug("could not unmap: {}", e.toString());
    }
  }
}
