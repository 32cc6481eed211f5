package dev.kvcache.bench;

import com.amazon.corretto.crypto.provider.AmazonCorrettoCryptoProvider;
import com.google.crypto.tink.Aead;
import com.google.crypto.tink.subtle.AesGcmJce;
import java.nio.ByteBuffer;
import java.security.Provider;
import java.security.Security;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.conscrypt.Conscrypt;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * AES-256-GCM over a block, as a tier that seals a namespace's blocks at rest would run it, by
 * each candidate implementation, beside what the tier does to the same bytes already: a copy
 * ({@code copy}) and a CRC32C ({@code crc32c}). {@code seal} encrypts a block from one direct
 * buffer into another with a fresh nonce and 48 bytes of associated data (the namespace, the
 * block's key and the key's id); {@code open} decrypts and checks one.
 *
 * <p>Candidates: the JDK's own provider ({@code jdk}, AES-NI and CLMUL intrinsics), Bouncy
 * Castle's ({@code bc}, Java), Conscrypt's ({@code conscrypt}, BoringSSL through JNI), the Amazon
 * Corretto Crypto Provider ({@code accp}, AWS-LC through JNI), all through {@link Cipher} on direct
 * buffers; and Tink ({@code tink}), whose AEAD takes and returns byte arrays, so its runs copy the
 * block onto the heap and back as a tier using it would. Providers that cannot load here (a
 * native library for another platform) fail their runs.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class SealBenchmark {

  @Param({"2097152", "33554432"})
  public int blockSizeBytes;

  @Param({"jdk", "bc", "conscrypt", "accp", "tink"})
  public String implementation;

  private static final int TAG_BYTES = 16;

  private final byte[] aad = new byte[48];
  private final byte[] nonce = new byte[12];
  private SecretKeySpec key;
  private Cipher cipher;
  private Aead tink;
  private ByteBuffer plain;
  private ByteBuffer sealed;
  private ByteBuffer out;
  private byte[] heapSealed;
  private long counter;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    byte[] k = new byte[32];
    for (int i = 0; i < k.length; i++) {
      k[i] = (byte) (i * 31 + 7);
    }
    key = new SecretKeySpec(k, "AES");
    plain = Blocks.randomDirect(blockSizeBytes, 7);
    out = ByteBuffer.allocateDirect(blockSizeBytes + TAG_BYTES);
    sealed = ByteBuffer.allocateDirect(blockSizeBytes + TAG_BYTES);
    if (implementation.equals("tink")) {
      tink = new AesGcmJce(k); // a random nonce per encryption, written before the ciphertext
      byte[] bytes = new byte[blockSizeBytes];
      plain.get(0, bytes);
      heapSealed = tink.encrypt(bytes, aad);
      out = ByteBuffer.allocateDirect(heapSealed.length);
      return;
    }
    cipher = Cipher.getInstance("AES/GCM/NoPadding", provider(implementation));
    cipher.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(128, nonce));
    cipher.updateAAD(aad);
    cipher.doFinal(plain.duplicate(), sealed);
    sealed.flip();
    nextNonce(); // a cipher refuses to encrypt twice under one nonce
  }

  private static Provider provider(String implementation) {
    return switch (implementation) {
      case "jdk" -> Security.getProvider("SunJCE");
      case "bc" -> new BouncyCastleProvider();
      case "conscrypt" -> Conscrypt.newProvider();
      case "accp" -> {
        AmazonCorrettoCryptoProvider.INSTANCE.assertHealthy();
        yield AmazonCorrettoCryptoProvider.INSTANCE;
      }
      default -> throw new IllegalArgumentException(implementation);
    };
  }

  private void nextNonce() {
    counter++;
    for (int i = 0; i < 8; i++) {
      nonce[4 + i] = (byte) (counter >>> (8 * i));
    }
  }

  @Benchmark
  public int seal() throws Exception {
    nextNonce();
    if (tink != null) {
      byte[] bytes = new byte[blockSizeBytes]; // Tink's API: the block on the heap, and back
      plain.get(0, bytes);
      byte[] result = tink.encrypt(bytes, aad);
      out.clear().put(result);
      return out.position();
    }
    cipher.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(128, nonce));
    cipher.updateAAD(aad);
    out.clear();
    return cipher.doFinal(plain.duplicate(), out);
  }

  @Benchmark
  public int open() throws Exception {
    if (tink != null) {
      byte[] result = tink.decrypt(heapSealed, aad);
      out.clear().put(result);
      return out.position();
    }
    cipher.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(128, new byte[12]));
    cipher.updateAAD(aad);
    out.clear();
    return cipher.doFinal(sealed.duplicate(), out);
  }

  @Benchmark
  public int copy() {
    out.clear().put(plain.duplicate());
    return out.position();
  }

  @Benchmark
  public long crc32c() {
    CRC32C crc = new CRC32C();
    crc.update(plain.duplicate());
    return crc.getValue();
  }
}
