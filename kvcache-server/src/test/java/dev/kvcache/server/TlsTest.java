package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.testkit.TestBytes;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.util.Map;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** TLS is configuration only: with it, HTTP/2 is negotiated by ALPN. */
class TlsTest {

  @TempDir Path dir;

  @Test
  void withTlsConfiguredClientsGetHttp2ByAlpn() throws Exception {
    try (TestServer server = TestServer.start(dir, Map.of(
        "micronaut.server.ssl.enabled", true,
        "micronaut.server.ssl.build-self-signed", true,
        "micronaut.server.ssl.port", -1))) {
      byte[] block = TestBytes.random(300_000, 5);
      HttpClient h2 = HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_2)
          .sslContext(trustingEveryone())
          .build();
      // by name: the self-signed certificate names localhost, not the address
      URI uri = URI.create("https://localhost:" + server.server.getPort()
          + TestServer.blockPath("default", BlockApiTest.key(1)));
      assertThat(server.server.getScheme()).isEqualTo("https");
      HttpResponse<byte[]> put = h2.send(HttpRequest.newBuilder(uri)
          .header("Content-Type", "application/octet-stream")
          .PUT(HttpRequest.BodyPublishers.ofByteArray(block)).build(),
          HttpResponse.BodyHandlers.ofByteArray());
      assertThat(put.statusCode()).isEqualTo(201);
      assertThat(put.version()).isEqualTo(HttpClient.Version.HTTP_2);
      HttpResponse<byte[]> get = h2.send(HttpRequest.newBuilder(uri).build(),
          HttpResponse.BodyHandlers.ofByteArray());
      assertThat(get.version()).isEqualTo(HttpClient.Version.HTTP_2);
      assertThat(get.body()).isEqualTo(block);
    }
  }

  /** The server's certificate is self-signed for the test. */
  private static SSLContext trustingEveryone() throws Exception {
    TrustManager trustAll = new X509TrustManager() {
      @Override
      public void checkClientTrusted(X509Certificate[] chain, String authType) {}

      @Override
      public void checkServerTrusted(X509Certificate[] chain, String authType) {}

      @Override
      public X509Certificate[] getAcceptedIssuers() {
        return new X509Certificate[0];
      }
    };
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, new TrustManager[] {trustAll}, null);
    return context;
  }
}
