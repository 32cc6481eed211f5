package dev.kvcache.disk.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The fault-injecting device loses, tears and keeps what a power loss would, and only that. */
class FaultyDeviceTest {

  private static final Path DIR = Path.of("/faulty");
  private static final Path FILE = DIR.resolve("f");

  private static byte[] filled(int length, int value) {
    byte[] b = new byte[length];
    Arrays.fill(b, (byte) value);
    return b;
  }

  private static byte[] read(StorageDevice device, Path file) throws IOException {
    try (DeviceFile f = device.open(file, false)) {
      ByteBuffer b = ByteBuffer.allocate((int) f.size());
      f.read(b, 0);
      return b.array();
    }
  }

  /** A file of 4 KiB of ones, forced with its name, then 4 KiB of twos written over it. */
  private static FaultyDevice deviceWithAnUnforcedWrite(long seed) throws IOException {
    FaultyDevice device = new FaultyDevice(1 << 20, seed);
    StorageDevice s = device.session();
    s.prepareDirectory(DIR);
    try (DeviceFile f = s.create(FILE)) {
      f.write(ByteBuffer.wrap(filled(4096, 1)), 0);
      f.force();
      s.forceDirectory(DIR);
      f.write(ByteBuffer.wrap(filled(4096, 2)), 0);
      assertThat(read(s, FILE)).as("what the process sees before the cut")
          .isEqualTo(filled(4096, 2));
    }
    return device;
  }

  @Test
  void anUnforcedWriteSurvivesIsLostOrIsTornAtSectorsAndAForcedOneAlwaysSurvives()
      throws IOException {
    Set<String> outcomes = new HashSet<>();
    for (long seed = 0; seed < 60; seed++) {
      FaultyDevice device = deviceWithAnUnforcedWrite(seed);
      device.cutPower();
      byte[] after = read(device.session(), FILE);
      assertThat(after).hasSize(4096);
      boolean torn = false;
      for (int sector = 0; sector < 8; sector++) {
        byte[] s = Arrays.copyOfRange(after, sector * 512, sector * 512 + 512);
        assertThat(s).as("sector %d is one write's or the other's", sector)
            .isIn(filled(512, 1), filled(512, 2));
        torn |= s[0] != after[0];
      }
      outcomes.add(torn ? "torn" : after[0] == 2 ? "survived" : "lost");
    }
    assertThat(outcomes).containsExactlyInAnyOrder("torn", "survived", "lost");

    FaultyDevice device = deviceWithAnUnforcedWrite(7);
    try (DeviceFile f = device.session().open(FILE, true)) {
      f.force();
    }
    device.cutPower();
    assertThat(read(device.session(), FILE)).isEqualTo(filled(4096, 2));
  }

  @Test
  void aNewFileWithoutADirectoryForceMayVanishAndWithOneStays() throws IOException {
    Set<Boolean> found = new HashSet<>();
    for (long seed = 0; seed < 20; seed++) {
      FaultyDevice device = new FaultyDevice(1 << 20, seed);
      StorageDevice s = device.session();
      s.prepareDirectory(DIR);
      try (DeviceFile f = s.create(FILE)) {
        f.write(ByteBuffer.wrap(filled(100, 3)), 0);
        f.force();
      }
      device.cutPower();
      found.add(device.session().exists(FILE));
    }
    assertThat(found).containsExactlyInAnyOrder(true, false);

    FaultyDevice device = new FaultyDevice(1 << 20, 1);
    StorageDevice s = device.session();
    s.prepareDirectory(DIR);
    try (DeviceFile f = s.create(FILE)) {
      f.write(ByteBuffer.wrap(filled(100, 3)), 0);
      f.force();
    }
    s.forceDirectory(DIR);
    s.delete(FILE); // not forced: may come back, with its forced bytes
    device.cutPower();
    StorageDevice after = device.session();
    if (after.exists(FILE)) {
      assertThat(read(after, FILE)).isEqualTo(filled(100, 3));
    }
  }

  @Test
  void writesAFailedForceHeldAreLostEvenAfterALaterForceSucceeds() throws IOException {
    FaultyDevice device = deviceWithAnUnforcedWrite(3);
    device.fault((op, path) -> op == FaultyDevice.Op.FORCE ? new IOException("EIO") : null);
    StorageDevice s = device.session();
    try (DeviceFile f = s.open(FILE, true)) {
      assertThatThrownBy(f::force).hasMessage("EIO");
      device.fault((op, path) -> null);
      f.force(); // succeeds, and holds nothing
    }
    device.cutPower();
    assertThat(read(device.session(), FILE)).isEqualTo(filled(4096, 1));
  }

  @Test
  void aSessionDiesWithThePowerAndTheNextSeesTheSurvivors() throws IOException {
    FaultyDevice device = deviceWithAnUnforcedWrite(5);
    StorageDevice before = device.session();
    DeviceFile open = before.open(FILE, true);
    device.cutPowerAfter(1);
    assertThatThrownBy(() -> open.write(ByteBuffer.wrap(filled(10, 9)), 0))
        .hasMessageContaining("lost power");
    assertThat(device.cutSince(before)).isTrue();
    assertThatThrownBy(() -> before.create(DIR.resolve("g"))).hasMessageContaining("lost power");
    StorageDevice after = device.session();
    assertThat(after.list(DIR)).containsExactly("f");
    assertThat(after.tryLock(DIR)).isNotNull(); // the dead process's locks are gone
  }
}
