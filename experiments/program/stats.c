/* What the run did: counts, and a histogram of record sizes kept as the
 * records go (hot) and printed at the end (cold). */
#define _GNU_SOURCE
#include <stdio.h>

#include "sender.h"

void count_record(struct stats* s, size_t bytes, int sent) {
  if (!sent) {
    ++s->failed;
    return;
  }
  ++s->sent;
  s->bytes += bytes;
  /* Buckets of 16 bytes; the last takes the rest. */
  size_t b = bytes / 16;
  if (b >= HIST_BUCKETS) b = HIST_BUCKETS - 1;
  ++s->hist[b];
  if (bytes > s->largest) s->largest = bytes;
}

/* Cold: the histogram, as rows of #. */
static void print_histogram(const struct stats* s) {
  long most = 0;
  for (int b = 0; b < HIST_BUCKETS; ++b)
    if (s->hist[b] > most) most = s->hist[b];
  if (most == 0) return;
  printf("record sizes (bytes: datagrams):\n");
  for (int b = 0; b < HIST_BUCKETS; ++b) {
    if (s->hist[b] == 0) continue;
    const int bar = (int)(40 * s->hist[b] / most);
    if (b == HIST_BUCKETS - 1)
      printf("  %4d+    %9ld %.*s\n", 16 * b, s->hist[b], bar,
             "########################################");
    else
      printf("  %4d-%-4d %9ld %.*s\n", 16 * b, 16 * b + 15, s->hist[b], bar,
             "########################################");
  }
}

/* Cold: what the run did. */
void print_summary(const struct options* o, const struct stats* s, double seconds) {
  printf("sent %ld datagrams (%llu bytes, largest %zu), %ld failed, %ld drained\n", s->sent,
         (unsigned long long)s->bytes, s->largest, s->failed, s->drained);
  if (seconds > 0 && s->sent > 0)
    printf("%.1f kpps, %.1f ns a datagram, %d gauges a record\n", s->sent / seconds / 1e3,
           seconds * 1e9 / (double)s->sent, o->size);
  print_histogram(s);
}
