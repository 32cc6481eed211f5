package dev.kvcache.server.access;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Who counts as a client on the server's host: the default, ranges, and settings refused. */
class SameHostTest {

  private static boolean contains(SameHost sameHost, String address) throws Exception {
    return sameHost.contains(InetAddress.getByName(address));
  }

  @Test
  void byDefaultTheTwoLoopbackAddressesAloneAndNoSidecar() throws Exception {
    SameHost byDefault = new SameHost(List.of("127.0.0.1", "::1"));
    assertThat(contains(byDefault, "127.0.0.1")).isTrue();
    assertThat(contains(byDefault, "::1")).isTrue();
    assertThat(contains(byDefault, "127.0.0.6")).as("a sidecar proxy's address").isFalse();
    assertThat(contains(byDefault, "10.1.2.3")).isFalse();
  }

  @Test
  void rangesAndNone() throws Exception {
    SameHost pod = new SameHost(List.of("127.0.0.0/8", "10.1.0.0/16", "fd00::/8"));
    assertThat(contains(pod, "127.0.0.6")).isTrue();
    assertThat(contains(pod, "10.1.200.3")).isTrue();
    assertThat(contains(pod, "10.2.0.1")).isFalse();
    assertThat(contains(pod, "fd12::1")).isTrue();
    assertThat(contains(pod, "::1")).isFalse();
    SameHost none = new SameHost(List.of(""));
    assertThat(contains(none, "127.0.0.1")).isFalse();
  }

  @Test
  void aSettingThatIsNoAddressIsRefusedByName() {
    assertThatThrownBy(() -> new SameHost(List.of("localhost")))
        .hasMessageContaining("kvcache.same-host").hasMessageContaining("'localhost'");
    assertThatThrownBy(() -> new SameHost(List.of("10.0.0.0/33")))
        .hasMessageContaining("prefix length");
  }
}
