/* The record each datagram carries: one line of a text line protocol, as
 * telemetry agents send them,
 *
 *   sender,host=H,app=A,seq=N t=NANOSECONDS,g0=V,g1=V,...,crc=XXXXXXXX
 *
 * its fields formatted by snprintf and the line sealed by a CRC-32 of what
 * precedes ",crc=". And the self-test of both. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sender.h"

/* CRC-32 (IEEE), bit by bit: small code, run on every record. */
uint32_t crc32_bits(const unsigned char* p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

/* Cold: checks the CRC and a record's format before the run. */
int self_test(void) {
  /* The check value of CRC-32/ISO-HDLC. */
  if (crc32_bits((const unsigned char*)"123456789", 9) != 0xcbf43926u) {
    fprintf(stderr, "udp_sender: self-test: CRC-32 of \"123456789\" is wrong\n");
    return -1;
  }
  char line[RECORD_BYTES];
  uint64_t rng = 1;
  const struct tags none = {0};
  const size_t n = build_record(line, sizeof line, 42, &rng, 3, &none);
  unsigned long long seq = 0, t = 0;
  unsigned g[3] = {0, 0, 0};
  unsigned crc = 0;
  if (n == 0 || line[n - 1] != '\n' ||
      sscanf(line, "sender,seq=%llu t=%llu,g0=%u,g1=%u,g2=%u,crc=%x", &seq, &t, &g[0], &g[1], &g[2],
             &crc) != 6 ||
      seq != 42) {
    fprintf(stderr, "udp_sender: self-test: a record does not read back: %.*s\n", (int)n, line);
    return -1;
  }
  const char* mark = strstr(line, ",crc=");
  if (mark == NULL || crc32_bits((const unsigned char*)line, (size_t)(mark - line)) != crc) {
    fprintf(stderr, "udp_sender: self-test: a record's CRC does not match: %.*s\n", (int)n, line);
    return -1;
  }
  return 0;
}

/* A gauge that moves: a xorshift generator, folded to a small range. */
static uint64_t next_gauge(uint64_t* state, int which) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *state = x;
  return (x >> (which & 15)) % 100000u;
}

/* What snprintf wrote, kept within the buffer (it returns what it would have). */
static size_t clamp(int wrote, size_t room) {
  if (wrote < 0 || room == 0) return 0;
  return (size_t)wrote < room ? (size_t)wrote : room - 1;
}

size_t build_record(char* buf, size_t cap, uint64_t seq, uint64_t* rng, int gauges,
                    const struct tags* tags) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  size_t n = clamp(snprintf(buf, cap, "sender"), cap);
  n += put_tags(buf + n, cap - n, tags);
  n += clamp(snprintf(buf + n, cap - n, ",seq=%" PRIu64 " t=%" PRIu64, seq, ns), cap - n);
  for (int g = 0; g < gauges; ++g)
    n += clamp(snprintf(buf + n, cap - n, ",g%d=%" PRIu64, g, next_gauge(rng, g)), cap - n);
  const uint32_t crc = crc32_bits((const unsigned char*)buf, n);
  n += clamp(snprintf(buf + n, cap - n, ",crc=%08" PRIx32 "\n", crc), cap - n);
  return n;
}
