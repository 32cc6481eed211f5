package dev.kvcache.server.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import org.junit.jupiter.api.Test;

/** {@code Range} headers as S3 reads them, of a 100-byte object and of an empty one. */
class ByteRangeTest {

  @Test
  void rangesOfAnObject() throws S3Exception {
    assertThat(ByteRange.parse("bytes=00-01", 100)).containsExactly(0, 2);
    assertThat(ByteRange.parse("bytes=-1", 100)).containsExactly(99, 100);
    assertThat(ByteRange.parse("bytes=-101", 100)).containsExactly(0, 100);
    assertThat(ByteRange.parse("bytes=0-999999", 100)).containsExactly(0, 100);
    assertThat(ByteRange.parse("bytes=50-", 100)).containsExactly(50, 100);
    assertThat(ByteRange.parse("bytes=99-99", 100)).containsExactly(99, 100);
  }

  @Test
  void headersS3DoesNotTakeAskForTheWholeObject() throws S3Exception {
    for (String h : new String[] {"bytes=,", "bytes= -1", "bytes=--1", "bytes=0 -1", "bytes=0--1",
        "bytes=10-5", "bytes=abc", "bytes=a-z", "foo=0-1", "bytes=100-x", "bytes=0-0,1-2",
        "bytes=102-0", "bytes=-"}) {
      assertThat(ByteRange.parse(h, 100)).as(h).isNull();
    }
    assertThat(ByteRange.parse("bytes=-1", 0)).as("a suffix of an empty object").isNull();
  }

  @Test
  void rangesPastTheEndAndEmptySuffixesAreUnsatisfiable() {
    for (long length : new long[] {100, 0}) {
      for (String h : new String[] {"bytes=-0", "bytes=100-100", "bytes=100-110", "bytes=100-"}) {
        if (length == 0 || !h.equals("bytes=100-")) {
          assertThatThrownBy(() -> ByteRange.parse(h, length)).as(h + " of " + length)
              .isInstanceOfSatisfying(S3Exception.class,
                  e -> assertThat(e.error()).isEqualTo(S3Error.INVALID_RANGE));
        }
      }
    }
    assertThatThrownBy(() -> ByteRange.parse("bytes=0-0", 0)).isInstanceOf(S3Exception.class);
  }
}
