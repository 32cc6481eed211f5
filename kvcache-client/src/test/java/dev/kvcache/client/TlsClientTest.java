package dev.kvcache.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.server.TestServer;
import dev.kvcache.spi.TierSettings;
import io.netty.handler.ssl.util.SelfSignedCertificate;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;
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
  static TestServer server;
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
    server = TestServer.start(dir.resolve("data"), Map.of(
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

  /** What was logged (slf4j-simple writes to {@code System.err}) while {@code action} ran. */
  private static String loggedWhile(Runnable action) {
    PrintStream stderr = System.err;
    ByteArrayOutputStream logged = new ByteArrayOutputStream();
    System.setErr(new PrintStream(logged, true, StandardCharsets.UTF_8));
    try {
      action.run();
    } finally {
      System.setErr(stderr);
    }
    return logged.toString(StandardCharsets.UTF_8);
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

  /**
   * The pattern of the warning that {@code server} is down for {@code reason}; newer JDKs put the
   * TLS alert's name, such as {@code (certificate_unknown)}, before the reason.
   */
  private static String refused(String server, String reason) {
    return Pattern.quote(server + " is down (java.io.IOException: TLS handshake failed: ")
        + "(\\([a-z_]+\\) )?" + Pattern.quote(reason);
  }

  @Test
  void aServerWhoseCertificateIsNotTrustedOrNamesAnotherHostIsDown() {
    Map<RemoteTierConfig, String> refusals = new LinkedHashMap<>();
    // the JVM's CAs never signed it
    refusals.put(config("localhost").tls(true).build(),
        refused("localhost:" + port, "PKIX path building failed"));
    // it names localhost
    refusals.put(config("127.0.0.1").trustedCertificates(certificate).build(),
        refused("127.0.0.1:" + port, "No subject alternative"));
    BlockKey key = BlockKey.of(0, 3);
    refusals.forEach((c, reason) -> {
      String logged = loggedWhile(() -> {
        try (RemoteTier tier = new RemoteTier(c)) {
          assertThat(tier.put(key, ByteBuffer.allocate(1000))).as(c.toString())
              .isEqualTo(PutStatus.NOT_ADMITTED);
          assertThat(tier.getInto(key, ByteBuffer.allocate(1000))).as(c.toString())
              .isEqualTo(GetStatus.MISS);
        }
      });
      assertThat(logged).as("what %s logged", c).containsPattern(reason);
    });
    // the server was up, and the refused connections sent it nothing
    try (RemoteTier trusted =
        new RemoteTier(config("localhost").trustedCertificates(certificate).build())) {
      assertThat(trusted.contains(key)).as("the block put over the refused connections").isFalse();
      byte[] block = new byte[200_000];
      new java.util.SplittableRandom(4).nextBytes(block);
      assertThat(roundTrip(trusted, 4)).isEqualTo(block);
    }
  }

  @Test
  void aTokenIsNotSentInCleartextBeyondThisHostUnlessAllowed() {
    assertThatThrownBy(() -> RemoteTierConfig.builder().server("192.0.2.10", 7070).token(TOKEN).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("cleartext to 192.0.2.10");
    // beyond this host: in cleartext when allowed, over TLS, or in cleartext without a token
    RemoteTierConfig allowed = RemoteTierConfig.builder().server("192.0.2.10", 7070).token(TOKEN)
        .allowCleartextToken(true).build();
    assertThat(allowed.token).isEqualTo(TOKEN);
    assertThat(allowed.tls).isFalse();
    RemoteTierConfig overTls = RemoteTierConfig.builder().server("192.0.2.10", 7070).token(TOKEN)
        .tls(true).build();
    assertThat(overTls.token).isEqualTo(TOKEN);
    assertThat(overTls.tls).isTrue();
    RemoteTierConfig noToken = RemoteTierConfig.builder().server("192.0.2.10", 7070).build();
    assertThat(noToken.token).isNull();
    assertThat(noToken.servers).extracting(InetSocketAddress::getHostString)
        .containsExactly("192.0.2.10");

    // on this host, by name or by address, the token goes in cleartext, and the server takes it
    try (TestServer cleartext = TestServer.start(dir.resolve("cleartext"), Map.of(
        "kvcache.auth.tokens.engine.secret", TOKEN,
        "kvcache.auth.tokens.engine.read", "default",
        "kvcache.auth.tokens.engine.write", "default"));
        RemoteTier tier = new RemoteTier(RemoteTierConfig.builder()
            .server("localhost", cleartext.port()).server("127.0.0.1", cleartext.port())
            .token(TOKEN).build())) {
      byte[] block = new byte[200_000];
      new java.util.SplittableRandom(5).nextBytes(block);
      assertThat(roundTrip(tier, 5)).isEqualTo(block);
    }
  }
}
