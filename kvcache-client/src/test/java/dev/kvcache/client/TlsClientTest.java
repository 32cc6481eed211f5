package dev.kvcache.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.spi.TierSettings;
import io.netty.handler.ssl.util.SelfSignedCertificate;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The remote tier over TLS, against a server in TLS mode whose certificate, for {@code localhost},
 * is signed by nobody the JVM trusts: with the certificate trusted, blocks go and come back over
 * HTTP/2 by ALPN; without it, or under another name, the server counts as down and nothing is
 * sent. And a token is never sent in cleartext beyond this host unless allowed.
 */
class TlsClientTest {

  private static final String TOKEN = "t".repeat(40);

  @TempDir static Path dir;
  static LocalServer server;
  static int port;
  static Path certificate;

  @BeforeAll
  static void start() throws Exception {
    SelfSignedCertificate self = new SelfSignedCertificate("localhost");
    certificate = dir.resolve("server.pem");
    Files.copy(self.certificate().toPath(), certificate);
    KeyStore keys = KeyStore.getInstance("PKCS12");
    keys.load(null, null);
    keys.setKeyEntry("server", self.key(), "secret".toCharArray(), new Certificate[] {self.cert()});
    Path keyStore = dir.resolve("server.p12");
    try (OutputStream out = Files.newOutputStream(keyStore)) {
      keys.store(out, "secret".toCharArray());
    }
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    server = LocalServer.start(dir.resolve("data"), 0, 8 << 20, Map.of(
        "micronaut.server.ssl.enabled", true,
        "micronaut.server.ssl.port", port,
        "micronaut.server.ssl.key-store.path", "file:" + keyStore,
        "micronaut.server.ssl.key-store.type", "PKCS12",
        "micronaut.server.ssl.key-store.password", "secret",
        "kvcache.auth.tokens.engine.secret", TOKEN,
        "kvcache.auth.tokens.engine.read", "default",
        "kvcache.auth.tokens.engine.write", "default"));
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  private static RemoteTierConfig.Builder config(String host) {
    return RemoteTierConfig.builder().server(host, port).token(TOKEN)
        .connectTimeout(java.time.Duration.ofSeconds(5));
  }

  private static byte[] roundTrip(RemoteTier tier, long n) {
    byte[] block = new byte[200_000];
    new java.util.SplittableRandom(n).nextBytes(block);
    BlockKey key = BlockKey.of(0, n);
    assertThat(tier.put(key, ByteBuffer.wrap(block))).isEqualTo(PutStatus.STORED);
    ByteBuffer back = ByteBuffer.allocate(block.length);
    assertThat(tier.getInto(key, back)).isEqualTo(GetStatus.HIT);
    return back.array();
  }

  @Test
  void withTheServersCertificateTrustedBlocksGoAndComeBack() {
    try (RemoteTier tier = new RemoteTier(config("localhost").trustedCertificates(certificate).build())) {
      byte[] block = new byte[200_000];
      new java.util.SplittableRandom(1).nextBytes(block);
      assertThat(roundTrip(tier, 1)).isEqualTo(block);
    }
  }

  @Test
  void theFactoryTakesHttpsServers() {
    try (RemoteTier tier = (RemoteTier) new RemoteTierFactory().open(TierSettings.of(Map.of(
        "servers", "https://localhost:" + port,
        "trusted-certificates", certificate.toString(),
        "token", TOKEN)), 8 << 20)) {
      byte[] block = new byte[200_000];
      new java.util.SplittableRandom(2).nextBytes(block);
      assertThat(roundTrip(tier, 2)).isEqualTo(block);
    }
  }

  @Test
  void aServerWhoseCertificateIsNotTrustedOrNamesAnotherHostIsDown() {
    for (RemoteTierConfig c : new RemoteTierConfig[] {
        config("localhost").tls(true).build(), // the JVM's CAs never signed it
        config("127.0.0.1").trustedCertificates(certificate).build()}) { // it names localhost
      try (RemoteTier tier = new RemoteTier(c)) {
        BlockKey key = BlockKey.of(0, 3);
        assertThat(tier.put(key, ByteBuffer.allocate(1000))).as(c.toString())
            .isEqualTo(PutStatus.NOT_ADMITTED);
        assertThat(tier.getInto(key, ByteBuffer.allocate(1000))).as(c.toString()).isEqualTo(GetStatus.MISS);
      }
    }
  }

  @Test
  void aTokenIsNotSentInCleartextBeyondThisHostUnlessAllowed() {
    assertThatThrownBy(() -> RemoteTierConfig.builder().server("192.0.2.10", 7070).token(TOKEN).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("cleartext to 192.0.2.10");
    assertThat(RemoteTierConfig.builder().server("192.0.2.10", 7070).token(TOKEN)
        .allowCleartextToken(true).build()).isNotNull();
    assertThat(RemoteTierConfig.builder().server("192.0.2.10", 7070).token(TOKEN).tls(true).build())
        .isNotNull();
    assertThat(RemoteTierConfig.builder().server("localhost", 7070).server("127.0.0.1", 7071)
        .token(TOKEN).build()).isNotNull();
    assertThat(RemoteTierConfig.builder().server("192.0.2.10", 7070).build()).isNotNull();
  }
}
