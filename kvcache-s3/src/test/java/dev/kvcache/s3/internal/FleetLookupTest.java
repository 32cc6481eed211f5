package dev.kvcache.s3.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Finding the fleet from a list or a DNS name, and this server in it. */
class FleetLookupTest {

  @Test
  void aDnsNameGivesItsAddressesAndThisHostIsFoundAmongThem() {
    Optional<Fleet> found = FleetLookup.dns("localhost:7070", null).find();
    assertThat(found).isPresent();
    assertThat(found.get().members()).contains("127.0.0.1:7070");
    assertThat(found.get().member()).as("a loopback address is this host's").isTrue();
  }

  @Test
  void aServerTheNameDoesNotListIsNoMemberAndOwnsNothing() {
    Fleet fleet = FleetLookup.dns("localhost:7070", "10.9.9.9:7070").find().orElseThrow();
    assertThat(fleet.member()).isFalse();
    assertThat(fleet.owns(dev.kvcache.BlockKey.of(1, 2))).isFalse();
  }

  @Test
  void aNameThatCannotBeLookedUpLeavesTheLastFleetStanding() {
    assertThat(FleetLookup.dns("no-such-host.invalid:7070", null).find()).isEmpty();
  }

  @Test
  void aListIsTakenAsGiven() {
    Fleet fleet = FleetLookup.of(List.of("a:1", "b:1"), "b:1").find().orElseThrow();
    assertThat(fleet.members()).containsExactly("a:1", "b:1");
    assertThat(fleet.member()).isTrue();
    assertThat(FleetLookup.alone().find()).contains(Fleet.ALONE);
  }
}
