/* Prometheus text exposition, read for one metric (promtext.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent/promtext.h"

bool agent_prom_name_valid(const char *name) {
  size_t n = 0;
  for (const char *p = name; *p; p++, n++) {
    char c = *p;
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!(alpha || (n > 0 && c >= '0' && c <= '9')) || n >= 127) return false;
  }
  return n > 0;
}

/* Skips a {label="value",...} block starting at p (< end); NULL when it
 * does not close on this line. */
static const char *skip_labels(const char *p, const char *end) {
  bool quoted = false;
  for (p++; p < end; p++) {
    if (quoted && *p == '\\' && p + 1 < end)
      p++;
    else if (*p == '"')
      quoted = !quoted;
    else if (!quoted && *p == '}')
      return p + 1;
  }
  return NULL;
}

/* The value of one line if it is a sample of `name`. */
static bool line_value(const char *p, const char *end, const char *name, size_t nlen,
                       double *ret) {
  if ((size_t)(end - p) <= nlen || memcmp(p, name, nlen) != 0) return false;
  p += nlen;
  if (*p == '{' && !(p = skip_labels(p, end))) return false;
  if (p >= end || (*p != ' ' && *p != '\t')) return false;
  while (p < end && (*p == ' ' || *p == '\t'))
    p++;
  char num[64];
  size_t k = 0;
  while (p < end && *p != ' ' && *p != '\t' && *p != '\r' && k < sizeof num - 1)
    num[k++] = *p++;
  num[k] = '\0';
  char *stop;
  double v = strtod(num, &stop);
  if (k == 0 || *stop || !isfinite(v)) return false;
  *ret = v;
  return true;
}

int agent_prom_sum(const char *text, size_t len, const char *name, double *ret_sum,
                   size_t *ret_series) {
  size_t nlen = strlen(name), series = 0;
  double sum = 0;
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    double v;
    if (*p != '#' && line_value(p, eol, name, nlen, &v)) sum += v, series++;
    p = eol + 1;
  }
  if (!series) return -ENOENT;
  *ret_sum = sum;
  *ret_series = series;
  return 0;
}
