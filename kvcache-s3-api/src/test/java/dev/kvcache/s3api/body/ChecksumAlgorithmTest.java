package dev.kvcache.s3api.body;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.checksums.DefaultChecksumAlgorithm;
import software.amazon.awssdk.checksums.SdkChecksum;

/**
 * Each checksum gives its catalogued check value for "123456789" and the AWS SDK's value for the
 * same random bytes (the SDK's CRC64NVME needs its native CRT library: the check values and two
 * ways of feeding the same bytes stand for it), whatever pieces the bytes come in.
 */
class ChecksumAlgorithmTest {

  private static final byte[] CHECK = "123456789".getBytes(StandardCharsets.US_ASCII);

  @Test
  void theCatalogueCheckValues() {
    assertThat(hex(ChecksumAlgorithm.CRC32, CHECK)).isEqualTo("cbf43926");
    assertThat(hex(ChecksumAlgorithm.CRC32C, CHECK)).isEqualTo("e3069283");
    assertThat(hex(ChecksumAlgorithm.CRC64NVME, CHECK)).isEqualTo("ae8b14860a799888");
    assertThat(hex(ChecksumAlgorithm.SHA256, new byte[0]))
        .isEqualTo("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assertThat(hex(ChecksumAlgorithm.MD5, CHECK)).isEqualTo("25f9e794323b453885f5181f1b624d0b");
    assertThat(hex(ChecksumAlgorithm.SHA512, new byte[0])).startsWith("cf83e1357eefb8bd")
        .endsWith("a538327af927da3e");
    // xxHash's own test vectors of no bytes, seed 0
    assertThat(hex(ChecksumAlgorithm.XXHASH64, new byte[0])).isEqualTo("ef46db3751d8e999");
    assertThat(hex(ChecksumAlgorithm.XXHASH3, new byte[0])).isEqualTo("2d06800538d394c2");
    assertThat(hex(ChecksumAlgorithm.XXHASH128, new byte[0]))
        .isEqualTo("99aa06d3014798d86001c324468d497f");
  }

  @Test
  void theSdksValuesForRandomBytesInPiecesOfAnySize() {
    byte[] data = new byte[1_000_003];
    new Random(7).nextBytes(data);
    for (var pair : new Object[][] {{ChecksumAlgorithm.CRC32, DefaultChecksumAlgorithm.CRC32},
        {ChecksumAlgorithm.CRC32C, DefaultChecksumAlgorithm.CRC32C},
        {ChecksumAlgorithm.SHA1, DefaultChecksumAlgorithm.SHA1},
        {ChecksumAlgorithm.SHA256, DefaultChecksumAlgorithm.SHA256},
        {ChecksumAlgorithm.MD5, DefaultChecksumAlgorithm.MD5}}) {
      SdkChecksum sdk = SdkChecksum.forAlgorithm((software.amazon.awssdk.checksums.spi.ChecksumAlgorithm) pair[1]);
      sdk.update(data, 0, data.length);
      String expected = Base64.getEncoder().encodeToString(sdk.getChecksumBytes());
      assertThat(inPieces((ChecksumAlgorithm) pair[0], data, 1_000)).as(pair[0].toString())
          .isEqualTo(expected);
      assertThat(((ChecksumAlgorithm) pair[0]).base64Length()).isEqualTo(expected.length());
    }
    for (ChecksumAlgorithm a : List.of(ChecksumAlgorithm.CRC64NVME, ChecksumAlgorithm.XXHASH64,
        ChecksumAlgorithm.XXHASH3, ChecksumAlgorithm.XXHASH128)) {
      assertThat(a.base64Length()).as(a.toString())
          .isEqualTo(inPieces(a, data, 13).length());
      assertThat(inPieces(a, data, 13)).as(a.toString())
          .isEqualTo(inPieces(a, data, data.length))
          .isEqualTo(fromDirectBuffer(a, data));
    }
  }

  @Test
  void algorithmsAreFoundByTheirNamesAndHeaders() {
    assertThat(ChecksumAlgorithm.named("CRC64NVME")).contains(ChecksumAlgorithm.CRC64NVME);
    assertThat(ChecksumAlgorithm.ofHeader("x-amz-checksum-crc32c")).contains(ChecksumAlgorithm.CRC32C);
    assertThat(ChecksumAlgorithm.ofHeader("x-amz-checksum-md5")).contains(ChecksumAlgorithm.MD5);
    assertThat(ChecksumAlgorithm.ofHeader("x-amz-checksum-xxhash64"))
        .contains(ChecksumAlgorithm.XXHASH64);
    assertThat(ChecksumAlgorithm.ofHeader("x-amz-checksum-xxhash256")).isEmpty();
    assertThat(ChecksumAlgorithm.SHA1.header()).isEqualTo("x-amz-checksum-sha1");
  }

  private static String inPieces(ChecksumAlgorithm a, byte[] data, int piece) {
    ChecksumAlgorithm.Running r = a.start();
    for (int at = 0; at < data.length; at += piece) {
      r.update(ByteBuffer.wrap(data, at, Math.min(piece, data.length - at)));
    }
    return r.base64();
  }

  private static String fromDirectBuffer(ChecksumAlgorithm a, byte[] data) {
    ChecksumAlgorithm.Running r = a.start();
    r.update(ByteBuffer.allocateDirect(data.length).put(data).flip());
    return r.base64();
  }

  private static String hex(ChecksumAlgorithm a, byte[] data) {
    ChecksumAlgorithm.Running r = a.start();
    r.update(ByteBuffer.wrap(data));
    return java.util.HexFormat.of().formatHex(Base64.getDecoder().decode(r.base64()));
  }
}
