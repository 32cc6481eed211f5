/*
 * CRC32C (Castagnoli) for kvcache._native: on the CPU's instruction where it has one (SSE 4.2 on
 * x86-64, the CRC extension on arm64), three lanes at once, else by tables. Static functions,
 * included by the module and by selftest.c, which checks them on each machine a wheel is built
 * for.
 */
#ifndef KVCACHE_CRC32C_H
#define KVCACHE_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#if defined(__clang__)
#define KV_HW_TARGET __attribute__((target("sse4.2,crc32")))
#else
#define KV_HW_TARGET __attribute__((target("sse4.2")))
#endif
#elif defined(__aarch64__)
#include <arm_acle.h>
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#if defined(__clang__)
#define KV_HW_TARGET __attribute__((target("crc")))
#else
#define KV_HW_TARGET __attribute__((target("+crc")))
#endif
#endif

/* ---- CRC32C (Castagnoli, reflected, polynomial 0x82F63B78) -------------------------------- */

#define POLY 0x82F63B78u
/* Bytes of each of the three lanes the hardware path runs at once. */
#define LANE 4096

static uint32_t table[8][256];
/* shift[k][b]: the register b << 8k followed by LANE zero bytes. */
static uint32_t shift[4][256];
static int hardware;

static uint32_t crc_sw(uint32_t c, const uint8_t *p, size_t n) {
  while (n && ((uintptr_t)p & 7)) {
    c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    n--;
  }
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    w ^= c;
    c = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
        table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
        table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return c;
}

/* The register c followed by LANE zero bytes. */
static inline uint32_t shifted(uint32_t c) {
  return shift[0][c & 0xff] ^ shift[1][(c >> 8) & 0xff] ^ shift[2][(c >> 16) & 0xff] ^
         shift[3][c >> 24];
}

#if defined(KV_HW_TARGET)
KV_HW_TARGET static inline uint32_t hw8(uint32_t c, uint64_t w) {
#if defined(__x86_64__)
  return (uint32_t)_mm_crc32_u64(c, w);
#else
  return __crc32cd(c, w);
#endif
}

KV_HW_TARGET static inline uint32_t hw1(uint32_t c, uint8_t b) {
#if defined(__x86_64__)
  return _mm_crc32_u8(c, b);
#else
  return __crc32cb(c, b);
#endif
}

KV_HW_TARGET static uint32_t crc_hw1(uint32_t c, const uint8_t *p, size_t n) {
  while (n && ((uintptr_t)p & 7)) {
    c = hw1(c, *p++);
    n--;
  }
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    c = hw8(c, w);
    p += 8;
    n -= 8;
  }
  while (n--) c = hw1(c, *p++);
  return c;
}

/* Three lanes at once (the instruction's latency is three times its issue interval), joined by
 * shifting each lane's register past the lanes after it. */
KV_HW_TARGET static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t n) {
  while (n && ((uintptr_t)p & 7)) {
    c = hw1(c, *p++);
    n--;
  }
  while (n >= 3 * LANE) {
    uint32_t c1 = 0, c2 = 0;
    const uint8_t *q = p;
    for (size_t i = 0; i < LANE; i += 8) {
      uint64_t a, b, d;
      memcpy(&a, q + i, 8);
      memcpy(&b, q + LANE + i, 8);
      memcpy(&d, q + 2 * LANE + i, 8);
      c = hw8(c, a);
      c1 = hw8(c1, b);
      c2 = hw8(c2, d);
    }
    c = shifted(shifted(c) ^ c1) ^ c2;
    p += 3 * LANE;
    n -= 3 * LANE;
  }
  return crc_hw1(c, p, n);
}
#endif

/* The raw register (no inversions) after data; crc32c() inverts around it. */
static uint32_t crc_raw(uint32_t c, const uint8_t *p, size_t n) {
#if defined(KV_HW_TARGET)
  if (hardware) return crc_hw(c, p, n);
#endif
  return crc_sw(c, p, n);
}

static void init_crc(void) {
  for (uint32_t b = 0; b < 256; b++) {
    uint32_t c = b;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
    table[0][b] = c;
  }
  for (uint32_t b = 0; b < 256; b++)
    for (int t = 1; t < 8; t++) table[t][b] = table[0][table[t - 1][b] & 0xff] ^ (table[t - 1][b] >> 8);
#if defined(__x86_64__)
  unsigned int a, b, c, d;
  hardware = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2);
#elif defined(__aarch64__)
  hardware = (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#endif
  /* the LANE-zero-bytes shift is linear: find it for each bit, then for each byte value */
  static const uint8_t zeros[LANE];
  uint32_t bit[32];
  for (int i = 0; i < 32; i++) bit[i] = crc_sw(1u << i, zeros, LANE);
  for (int k = 0; k < 4; k++)
    for (uint32_t b = 0; b < 256; b++) {
      uint32_t s = 0;
      for (int i = 0; i < 8; i++)
        if (b >> i & 1) s ^= bit[8 * k + i];
      shift[k][b] = s;
    }
}

static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n) {
  return ~crc_raw(~crc, p, n);
}

/* The CRC32C of a run of bytes followed by ``len`` bytes whose own CRC32C is ``b``, given the
 * first run's ``a``: the register is linear, so it is a's register carried past ``len`` zero
 * bytes, plus b. */
static uint32_t crc_join(uint32_t a, uint32_t b, size_t len) {
  static const uint8_t zeros[LANE];
  uint32_t r = a;
  for (; len >= LANE; len -= LANE) r = shifted(r);
  return crc_sw(r, zeros, len) ^ b;
}

#endif
