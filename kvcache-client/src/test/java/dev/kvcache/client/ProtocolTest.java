package dev.kvcache.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Reading a lookup's answer, as servers send it and as they might send it damaged. */
class ProtocolTest {

  @Test
  void aPinnedLookupsAnswerGivesItsCountLeaseAndLengthsWhateverElseItHolds() throws IOException {
    Protocol.LookupAnswer a = Protocol.lookupAnswer("{\"present\":2,"
        + "\"tiers\":[{\"tier\":\"ram\",\"blocks\":1},{\"tier\":\"disk\",\"blocks\":1}],"
        + "\"load_us\":120,\"lease\":\"00ff\",\"expires_in_ms\":5000,\"lengths\":[4096, 70000],"
        + "\"shared_memory\":[{\"file\":\"/dev/shm/x\",\"offset\":0},null],"
        + "\"copy_token\":\"abcd\",\"later\":{\"lengths\":[1],\"present\":9}}");
    assertThat(a.present()).isEqualTo(2);
    assertThat(a.lease()).isEqualTo("00ff");
    assertThat(a.lengths()).containsExactly(4096, 70000);
  }

  @Test
  void anAnswerWithoutAPinHasNoLease() throws IOException {
    Protocol.LookupAnswer a = Protocol.lookupAnswer(" {\"present\" : 0, \"tiers\" : []} ");
    assertThat(a.present()).isZero();
    assertThat(a.lease()).isNull();
    assertThat(a.lengths()).isEmpty();
  }

  @Test
  void whatIsNotALookupsAnswerIsRefusedWithItsReason() {
    for (String bad : List.of("", "[]", "{\"tiers\":[]}", "{\"present\":\"2\"}",
        "{\"present\":2,\"lengths\":[1,\"x\"]}", "{\"present\":2", "{\"present\":2,\"lease\":7}")) {
      assertThatThrownBy(() -> Protocol.lookupAnswer(bad)).as(bad).isInstanceOf(IOException.class);
    }
  }
}
