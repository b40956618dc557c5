/* A small UDP telemetry sender: the example program for `simloop layout` on a
 * program of your own (experiments/program/README.md).
 *
 * Each iteration of its loop builds one record (a line of text with its tags,
 * a sequence number, a clock reading and a few synthetic gauges, formatted by
 * snprintf and sealed with a CRC-32) and sends it as one datagram to a socket
 * of its own on 127.0.0.1, which it drains now and then. Start-up, the option
 * parser, the self-test and the summary are cold: they run once, but lie
 * between the hot functions in the default link, as such code does in real
 * programs.
 *
 *   udp_sender -n COUNT [-s GAUGES] [-t KEY=VALUE]... [-q]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sender.h"

/* Cold: what the options mean. */
static void usage(FILE* out) {
  fprintf(out,
          "usage: udp_sender -n COUNT [-s GAUGES] [-t KEY=VALUE]... [-q]\n"
          "  -n COUNT      datagrams to send (the loop's iterations)\n"
          "  -s GAUGES     synthetic gauges in each record, 1-64 (default 8)\n"
          "  -t KEY=VALUE  a tag of every record, up to 8 (default: host and app)\n"
          "  -q            no summary at the end\n"
          "Sends to a socket of its own on 127.0.0.1 and drains it; nothing leaves the host.\n");
}

/* Cold: parses the options, refusing what it does not know. */
static int parse_options(int argc, char** argv, struct options* o) {
  o->count = -1;
  o->size = 8;
  o->quiet = 0;
  o->tags.count = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (strcmp(a, "-n") == 0 && i + 1 < argc) {
      char* end = NULL;
      errno = 0;
      o->count = strtol(argv[++i], &end, 10);
      if (errno != 0 || *end != '\0' || o->count < 0) {
        fprintf(stderr, "udp_sender: -n '%s': expected a count of datagrams\n", argv[i]);
        return -1;
      }
    } else if (strcmp(a, "-s") == 0 && i + 1 < argc) {
      char* end = NULL;
      long s = strtol(argv[++i], &end, 10);
      if (*end != '\0' || s < 1 || s > 64) {
        fprintf(stderr, "udp_sender: -s '%s': expected 1 to 64 gauges\n", argv[i]);
        return -1;
      }
      o->size = (int)s;
    } else if (strcmp(a, "-t") == 0 && i + 1 < argc) {
      if (add_tag(&o->tags, argv[++i]) != 0) return -1;
    } else if (strcmp(a, "-q") == 0) {
      o->quiet = 1;
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      exit(0);
    } else {
      fprintf(stderr, "udp_sender: unknown option '%s'\n", a);
      usage(stderr);
      return -1;
    }
  }
  if (o->tags.count == 0 && default_tags(&o->tags) != 0) return -1;
  if (o->count < 0) {
    fprintf(stderr, "udp_sender: -n COUNT is required\n");
    usage(stderr);
    return -1;
  }
  return 0;
}

int main(int argc, char** argv) {
  struct options o;
  if (parse_options(argc, argv, &o) != 0) return 2;
  if (self_test() != 0) return 1;
  int rx = -1, tx = -1;
  struct sockaddr_in to;
  if (open_sockets(&rx, &tx, &to) != 0) return 1;
  struct stats s;
  memset(&s, 0, sizeof s);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  send_loop(&o, rx, tx, &to, &s);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  close(tx);
  close(rx);
  if (!o.quiet)
    print_summary(&o, &s, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
  return s.failed == 0 ? 0 : 1;
}
