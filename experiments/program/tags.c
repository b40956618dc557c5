/* The record's tags (-t KEY=VALUE): kept as given, and escaped as the line
 * protocol wants them (a comma, a space or an equals sign behind a
 * backslash) into every record, as agents that take tags at run time do. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sender.h"

/* Cold: one -t KEY=VALUE, checked and kept. */
int add_tag(struct tags* t, const char* spec) {
  const char* eq = strchr(spec, '=');
  if (eq == NULL || eq == spec || eq[1] == '\0') {
    fprintf(stderr, "udp_sender: -t '%s': expected KEY=VALUE\n", spec);
    return -1;
  }
  if (t->count == MAX_TAGS) {
    fprintf(stderr, "udp_sender: -t '%s': at most %d tags\n", spec, MAX_TAGS);
    return -1;
  }
  const size_t k = (size_t)(eq - spec), v = strlen(eq + 1);
  if (k >= sizeof t->key[0] || v >= sizeof t->value[0]) {
    fprintf(stderr, "udp_sender: -t '%s': a key over %zu bytes or a value over %zu\n", spec,
            sizeof t->key[0] - 1, sizeof t->value[0] - 1);
    return -1;
  }
  memcpy(t->key[t->count], spec, k);
  t->key[t->count][k] = '\0';
  memcpy(t->value[t->count], eq + 1, v + 1);
  ++t->count;
  return 0;
}

/* Cold: the tags every record has unless -t gives others: the host's name
 * and the program's. */
int default_tags(struct tags* t) {
  char host[64];
  if (gethostname(host, sizeof host) != 0) strcpy(host, "unknown");
  host[sizeof host - 1] = '\0';
  char spec[96];
  snprintf(spec, sizeof spec, "host=%s", host);
  if (add_tag(t, spec) != 0) return -1;
  return add_tag(t, "app=udp sender, example");
}

/* `s` escaped into `out` (at most `room` bytes, room > 0); the bytes
 * written. */
static size_t escape(char* out, size_t room, const char* s) {
  size_t n = 0;
  for (; *s != '\0' && n + 2 < room; ++s) {
    if (*s == ',' || *s == ' ' || *s == '=') out[n++] = '\\';
    out[n++] = *s;
  }
  out[n] = '\0';
  return n;
}

size_t put_tags(char* out, size_t room, const struct tags* t) {
  size_t n = 0;
  if (room == 0) return 0;
  for (int i = 0; i < t->count && n + 2 < room; ++i) {
    out[n++] = ',';
    n += escape(out + n, room - n, t->key[i]);
    if (n + 2 >= room) break;
    out[n++] = '=';
    n += escape(out + n, room - n, t->value[i]);
  }
  out[n] = '\0';
  return n;
}
