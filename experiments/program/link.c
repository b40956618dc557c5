/* The sockets and the loop around the datagrams. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sender.h"

/* Cold: opens the receiving socket and the sending one. */
int open_sockets(int* rx, int* tx, struct sockaddr_in* to) {
  *rx = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  *tx = socket(AF_INET, SOCK_DGRAM, 0);
  if (*rx < 0 || *tx < 0) {
    perror("udp_sender: socket");
    return -1;
  }
  memset(to, 0, sizeof *to);
  to->sin_family = AF_INET;
  to->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to->sin_port = 0; /* the kernel picks a free port */
  socklen_t len = sizeof *to;
  if (bind(*rx, (struct sockaddr*)to, sizeof *to) != 0 ||
      getsockname(*rx, (struct sockaddr*)to, &len) != 0) {
    perror("udp_sender: bind");
    return -1;
  }
  return 0;
}

static long drain(int rx, unsigned char* scratch, size_t n) {
  long got = 0;
  while (recv(rx, scratch, n, 0) > 0) ++got;
  return got;
}

/* The loop around the datagrams: what runs every iteration. */
void send_loop(const struct options* o, int rx, int tx, const struct sockaddr_in* to,
               struct stats* s) {
  char buf[RECORD_BYTES];
  unsigned char scratch[RECORD_BYTES];
  uint64_t rng = 0x9e3779b97f4a7c15u;
  for (long seq = 0; seq < o->count; ++seq) {
    const size_t n = build_record(buf, sizeof buf, (uint64_t)seq, &rng, o->size, &o->tags);
    count_record(s, n, sendto(tx, buf, n, 0, (const struct sockaddr*)to, sizeof *to) == (ssize_t)n);
    if ((seq & 63) == 63) s->drained += drain(rx, scratch, sizeof scratch);
  }
  s->drained += drain(rx, scratch, sizeof scratch);
}
