/* Throughput from a training job's log lines (include/pflex/tput.h).
 *
 * Trainers print their speed in many shapes: torchtitan `tps: 6,135`,
 * Hugging Face dicts `'train_tokens_per_second': 5230.1`, custom loggers
 * `tokens/s=51234`. A POSIX extended regular expression picks the number out
 * of each line; the default one knows these shapes and a user pattern names
 * the number with its first capture group. Colour escape codes are removed
 * before matching (torchtitan colours its keys) and commas inside the number
 * are taken as thousands separators. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pflex/tput.h"

/* Group 1 anchors the key at a word start, group 2 is the key, 3-5 are inside
 * the key; group 6 is the number (DEFAULT_GROUP). */
const char pflex_tput_default_pattern[] =
    "(^|[^[:alnum:]])"
    "(tokens?[_ ]?per[_ ]?s(ec(ond)?)?|tokens?/s(ec)?|tok/s|tps|tgs)"
    "[\"']?[[:space:]]*[:=][[:space:]]*"
    "([0-9][0-9,]*(\\.[0-9]+)?([eE][+-]?[0-9]+)?)";
#define DEFAULT_GROUP 6

const char pflex_tput_default_skip[] = "(^|[^[:alnum:]])eval";

/* No real log line comes near this; a longer partial line is dropped. */
#define MAX_LINE (64 * 1024)

int pflex_tput_regex_init(struct pflex_tput_regex *re, const struct pflex_tput_regex_opts *opts,
                          char *errbuf, size_t errsize) {
  memset(re, 0, sizeof *re);
  bool user = opts && opts->pattern && opts->pattern[0];
  const char *pattern = user ? opts->pattern : pflex_tput_default_pattern;
  int flags = REG_EXTENDED;
  if (!user || opts->icase) flags |= REG_ICASE;
  int rc = regcomp(&re->re, pattern, flags);
  if (rc != 0) {
    if (errbuf && errsize) regerror(rc, &re->re, errbuf, errsize);
    regfree(&re->re);
    memset(re, 0, sizeof *re);
    return -EINVAL;
  }
  if (user && re->re.re_nsub < 1) {
    if (errbuf && errsize)
      snprintf(errbuf, errsize, "the pattern needs a capture group ( ) around the number");
    regfree(&re->re);
    memset(re, 0, sizeof *re);
    return -EINVAL;
  }
  const char *skip = opts && opts->skip ? opts->skip : pflex_tput_default_skip;
  if (skip[0]) {
    rc = regcomp(&re->skip, skip, REG_EXTENDED | REG_ICASE | REG_NOSUB);
    if (rc != 0) {
      if (errbuf && errsize) regerror(rc, &re->skip, errbuf, errsize);
      regfree(&re->skip);
      regfree(&re->re);
      memset(re, 0, sizeof *re);
      return -EINVAL;
    }
    re->has_skip = true;
  }
  re->group = user ? 1 : DEFAULT_GROUP;
  re->per_step_time = opts && opts->per_step_time;
  re->scale = opts && opts->scale > 0 ? opts->scale : 1.0;
  return 0;
}

void pflex_tput_regex_release(struct pflex_tput_regex *re) {
  if (!re) return;
  if (re->group) regfree(&re->re); /* group is 0 only when init failed or never ran */
  if (re->has_skip) regfree(&re->skip);
  free(re->line);
  memset(re, 0, sizeof *re);
}

/* Copies s without ANSI escape sequences (ESC [ params final, or ESC + one char). */
static char *strip_ansi(const char *s) {
  size_t n = strlen(s);
  char *out = malloc(n + 1), *o = out;
  if (!out) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (s[i] != '\033') {
      *o++ = s[i];
      continue;
    }
    if (i + 1 < n && s[i + 1] == '[') {
      i += 2;
      while (i < n && !((unsigned char)s[i] >= 0x40 && (unsigned char)s[i] <= 0x7e))
        i++;
    } else if (i + 1 < n) {
      i++;
    }
  }
  *o = '\0';
  return out;
}

int pflex_tput_regex_match(const struct pflex_tput_regex *re, const char *line, double *ret_value) {
  char *clean = strip_ansi(line);
  if (!clean) return -ENOMEM;
  regmatch_t m[10];
  size_t nm = re->group + 1 <= 10 ? (size_t)re->group + 1 : 10;
  int r = -ENOENT;
  if (re->has_skip && regexec(&re->skip, clean, 0, NULL, 0) == 0) goto out;
  if (regexec(&re->re, clean, nm, m, 0) != 0 || m[re->group].rm_so < 0) goto out;
  r = -EINVAL;
  char num[64];
  size_t k = 0;
  for (regoff_t i = m[re->group].rm_so; i < m[re->group].rm_eo; i++) {
    char c = clean[i];
    if (c == ',' || c == '_') continue; /* thousands separators */
    if (k + 1 >= sizeof num) goto out;
    num[k++] = c;
  }
  num[k] = '\0';
  char *end;
  double v = strtod(num, &end);
  if (k == 0 || *end || !isfinite(v) || !(v > 0)) goto out;
  if (re->per_step_time) v = 1.0 / v;
  v *= re->scale;
  if (!isfinite(v) || !(v > 0)) goto out; /* 1 / 1e-310, or an overflowing scale */
  *ret_value = v;
  r = 0;
out:
  free(clean);
  return r;
}

/* Matches the completed line in re->line[0..len) and resets the buffer. */
static int finish_line(struct pflex_tput_regex *re, double time_s, pflex_tput_fn fn, void *ud) {
  if (!re->len) return 0;
  re->line[re->len] = '\0';
  re->len = 0;
  double v;
  int r = pflex_tput_regex_match(re, re->line, &v);
  if (r == -ENOMEM) return r;
  if (r == -EINVAL) re->bad++;
  if (r != 0) return 0;
  re->matched++;
  return fn ? fn(time_s, v, ud) : 0;
}

int pflex_tput_regex_feed(struct pflex_tput_regex *re, const char *data, size_t len, double time_s,
                          pflex_tput_fn fn, void *userdata) {
  if (len == 0) return finish_line(re, time_s, fn, userdata);
  for (size_t i = 0; i < len; i++) {
    char c = data[i];
    /* tqdm-style progress bars rewrite a line with '\r': each is a line. */
    if (c == '\n' || c == '\r') {
      int r = finish_line(re, time_s, fn, userdata);
      if (r != 0) return r;
      continue;
    }
    if (re->len >= MAX_LINE) continue; /* the rest of an absurd line is dropped */
    if (re->len + 2 > re->cap) {
      size_t cap = re->cap ? 2 * re->cap : 256;
      char *l = realloc(re->line, cap);
      if (!l) return -ENOMEM;
      re->line = l;
      re->cap = cap;
    }
    re->line[re->len++] = c;
  }
  return 0;
}
