/* The example sender's parts (udp_sender.c, tags.c, record.c, stats.c,
 * link.c): five objects, as a program of several files is linked. */
#pragma once

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { MAX_TAGS = 8, HIST_BUCKETS = 64 };

struct tags {
  int count;
  char key[MAX_TAGS][32], value[MAX_TAGS][64];
};

struct options {
  long count;
  int size; /* gauges a record */
  int quiet;
  struct tags tags;
};

struct stats {
  long sent, failed, drained;
  uint64_t bytes;
  size_t largest;
  long hist[HIST_BUCKETS];
};

/* tags.c: -t KEY=VALUE, and the tags escaped into a record. */
int add_tag(struct tags* t, const char* spec);
int default_tags(struct tags* t);
size_t put_tags(char* out, size_t room, const struct tags* t);

/* stats.c: what the run did. */
void count_record(struct stats* s, size_t bytes, int sent);

/* record.c: the record a datagram carries, and checks of its encoding. */
/* A record's buffer: 8 tags of the longest, each byte escaped, and 64
 * gauges fit. */
enum { RECORD_BYTES = 4096 };
size_t build_record(char* buf, size_t cap, uint64_t seq, uint64_t* rng, int gauges,
                    const struct tags* tags);
uint32_t crc32_bits(const unsigned char* p, size_t n);
int self_test(void);

/* link.c: the sockets and the loop around the datagrams. */
int open_sockets(int* rx, int* tx, struct sockaddr_in* to);
void send_loop(const struct options* o, int rx, int tx, const struct sockaddr_in* to,
               struct stats* s);
void print_summary(const struct options* o, const struct stats* s, double seconds);
