/*
 * Checks kvcache._native's CRC32C on the machine it runs on: the hardware path (three lanes and
 * their join) against the table path, and both against the check value, over lengths and
 * alignments around the lanes; and joins of the CRCs of parts, as copies on several threads make
 * them. python/wheels.sh builds it for each machine a wheel is built for and runs it (arm64 under
 * qemu). Exits 1 on the first disagreement; prints whether the hardware path ran.
 */
#include <stdio.h>
#include <stdlib.h>

#include "crc32c.h"

static int fail(const char *what, size_t len, size_t skew, uint32_t got, uint32_t want) {
  fprintf(stderr, "%s: length %zu at +%zu: %08x, want %08x\n", what, len, skew, got, want);
  return 1;
}

int main(void) {
  init_crc();
  const uint8_t check[] = "123456789";
  if (~crc_sw(~0u, check, 9) != 0xE3069283u) return fail("tables", 9, 0, ~crc_sw(~0u, check, 9), 0xE3069283u);
  if (crc32c(0, check, 9) != 0xE3069283u) return fail("crc32c", 9, 0, crc32c(0, check, 9), 0xE3069283u);
  size_t most = 5 * 12288 + 77;
  uint8_t *data = malloc(most + 8);
  if (!data) return 2;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < most + 8; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    data[i] = (uint8_t)x;
  }
  const size_t lengths[] = {0, 1, 7, 8, 9, 4095, 4096, 12287, 12288, 12289, 24576, 40000, 5 * 12288 + 77};
  for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
    for (size_t skew = 0; skew < 8; skew++) {
      size_t len = lengths[k];
      const uint8_t *p = data + skew;
      uint32_t want = ~crc_sw(~0u, p, len);
      uint32_t got = crc32c(0, p, len);
      if (got != want) return fail(hardware ? "hardware" : "tables", len, skew, got, want);
      for (size_t cut = 0; cut <= len; cut += len / 3 + 1) {
        uint32_t joined = crc_join(crc32c(0, p, cut), crc32c(0, p + cut, len - cut), len - cut);
        if (joined != want) return fail("join", len, cut, joined, want);
      }
    }
  }
  free(data);
  printf("CRC32C agrees on %s (%s)\n",
#if defined(__x86_64__)
         "x86-64",
#elif defined(__aarch64__)
         "arm64",
#else
         "this machine",
#endif
         hardware ? "the CPU's instruction" : "tables only");
  return 0;
}
