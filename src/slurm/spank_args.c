/* The plugin's inputs, checked (spank_args.h). */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "spank_args.h"

static const char *const default_classes[] = {"rigid", "flex10", "flex25", "flex50"};

__attribute__((format(printf, 3, 4))) static int fail(char *msg, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, len, fmt, ap);
  va_end(ap);
  return -EINVAL;
}

static bool class_name_ok(const char *s, size_t n) {
  if (n == 0 || n > PFLEX_SPANK_CLASS_MAX) return false;
  for (size_t k = 0; k < n; k++)
    if (!isalnum((unsigned char)s[k]) && s[k] != '_' && s[k] != '-') return false;
  return true;
}

void pflex_spank_conf_init(struct pflex_spank_conf *c) {
  memset(c, 0, sizeof *c);
  snprintf(c->socket, sizeof c->socket, "%s", "/run/pflex/pflexd.sock");
  for (size_t k = 0; k < sizeof default_classes / sizeof default_classes[0]; k++)
    snprintf(c->classes[c->nclasses++], PFLEX_SPANK_CLASS_MAX + 1, "%s", default_classes[k]);
  c->timeout_ms = 5000;
  c->on_error = PFLEX_SPANK_ON_ERROR_LOG;
}

/* Adds the class s[0..n) unless present. where names the source for messages. */
static int add_class(struct pflex_spank_conf *c, const char *s, size_t n, const char *where,
                     char *msg, size_t len) {
  if (!class_name_ok(s, n))
    return fail(msg, len, "%s: class name '%.*s' must be 1-%d of A-Z a-z 0-9 _ -", where, (int)n, s,
                PFLEX_SPANK_CLASS_MAX);
  for (size_t k = 0; k < c->nclasses; k++)
    if (strlen(c->classes[k]) == n && memcmp(c->classes[k], s, n) == 0) return 0;
  if (c->nclasses == PFLEX_SPANK_MAX_CLASSES)
    return fail(msg, len, "%s: more than %d classes", where, PFLEX_SPANK_MAX_CLASSES);
  snprintf(c->classes[c->nclasses++], PFLEX_SPANK_CLASS_MAX + 1, "%.*s", (int)n, s);
  return 0;
}

static int set_classes(struct pflex_spank_conf *c, const char *v, char *msg, size_t len) {
  c->nclasses = 0;
  for (const char *p = v;;) {
    size_t n = strcspn(p, ",");
    int err = add_class(c, p, n, "plugstack argument classes", msg, len);
    if (err) return err;
    if (!p[n]) return 0;
    p += n + 1;
  }
}

/* path opened for reading when root owns it and no one else may write it
 * (the prolog reads it as root); else NULL with the reason in msg. */
static FILE *open_trusted(const char *key, const char *path, int *ret_err, char *msg, size_t len) {
  FILE *f = fopen(path, "r");
  struct stat st;
  if (!f) {
    *ret_err = -errno;
    snprintf(msg, len, "plugstack argument %s: %s: %s", key, path, strerror(errno));
    return NULL;
  }
  if (fstat(fileno(f), &st) != 0 || st.st_uid != 0 || (st.st_mode & 022)) {
    *ret_err = fail(msg, len,
                    "plugstack argument %s: %s: must be owned by root and writable by no one else",
                    key, path);
    fclose(f);
    return NULL;
  }
  return f;
}

/* One class per line, its first word; blank lines and '#' comments skipped. */
static int read_classes_file(struct pflex_spank_conf *c, const char *path, char *msg, size_t len) {
  int err = 0;
  FILE *f = open_trusted("classes_file", path, &err, msg, len);
  if (!f) return err;
  char line[512], where[PATH_MAX + 32];
  c->nclasses = 0;
  for (unsigned lineno = 1; !err && fgets(line, sizeof line, f); lineno++) {
    snprintf(where, sizeof where, "%s:%u", path, lineno);
    if (!strchr(line, '\n') && !feof(f)) {
      err = fail(msg, len, "%s: line longer than %zu characters", where, sizeof line - 2);
      break;
    }
    const char *p = line + strspn(line, " \t");
    size_t n = strcspn(p, " \t\r\n#");
    if (n > 0) err = add_class(c, p, n, where, msg, len);
  }
  if (!err && ferror(f)) err = fail(msg, len, "%s: read error", path);
  fclose(f);
  if (!err && c->nclasses == 0) err = fail(msg, len, "%s: names no class", path);
  return err;
}

static int set_socket(struct pflex_spank_conf *c, const char *v, char *msg, size_t len) {
  if (v[0] != '/') return fail(msg, len, "plugstack argument socket=%s: not an absolute path", v);
  if (strlen(v) >= sizeof c->socket)
    return fail(msg, len, "plugstack argument socket: longer than %zu characters",
                sizeof c->socket - 1);
  snprintf(c->socket, sizeof c->socket, "%s", v);
  return 0;
}

static int set_mapping_dir(struct pflex_spank_conf *c, const char *v, char *msg, size_t len) {
  if (v[0] != '/')
    return fail(msg, len, "plugstack argument mapping_dir=%s: not an absolute path", v);
  if (strlen(v) >= sizeof c->mapping_dir)
    return fail(msg, len, "plugstack argument mapping_dir: longer than %zu characters",
                sizeof c->mapping_dir - 1);
  snprintf(c->mapping_dir, sizeof c->mapping_dir, "%s", v);
  return 0;
}

static int set_timeout(struct pflex_spank_conf *c, const char *v, char *msg, size_t len) {
  char *end;
  errno = 0;
  long ms = strtol(v, &end, 10);
  if (errno || end == v || *end || ms < 100 || ms > 60000)
    return fail(msg, len, "plugstack argument timeout_ms=%s: want milliseconds in [100, 60000]", v);
  c->timeout_ms = ms;
  return 0;
}

static int set_on_error(struct pflex_spank_conf *c, const char *v, char *msg, size_t len) {
  if (strcmp(v, "log") == 0)
    c->on_error = PFLEX_SPANK_ON_ERROR_LOG;
  else if (strcmp(v, "fail") == 0)
    c->on_error = PFLEX_SPANK_ON_ERROR_FAIL;
  else
    return fail(msg, len, "plugstack argument on_error=%s: want log or fail", v);
  return 0;
}

static int set_classes_file(struct pflex_spank_conf *c, const char *v, char *msg, size_t len) {
  return read_classes_file(c, v, msg, len);
}

struct ini_ctx {
  struct pflex_spank_conf *c;
  const char *path;
  char *msg;
  size_t len;
  int err;
};

/* pflex-controller's classes are its "[class NAME]" sections (that have a
 * key, as the controller sees them too); its other keys do not matter here. */
static int on_ini_key(void *user, const char *section, const char *name, const char *value) {
  struct ini_ctx *x = user;
  if (x->err || strncmp(section, "class ", 6) != 0) return 1;
  char where[PATH_MAX + 32];
  snprintf(where, sizeof where, "%s [%s]", x->path, section);
  x->err = add_class(x->c, section + 6, strlen(section + 6), where, x->msg, x->len);
  return 1;
}

static int set_controller_config(struct pflex_spank_conf *c, const char *v, char *msg, size_t len) {
  int err = 0;
  FILE *f = open_trusted("controller_config", v, &err, msg, len);
  if (!f) return err;
  struct ini_ctx x = {c, v, msg, len, 0};
  c->nclasses = 0;
  int line = ini_parse_file(f, on_ini_key, &x);
  fclose(f);
  if (x.err) return x.err;
  if (line != 0)
    return fail(msg, len, "plugstack argument controller_config: %s:%d: not INI", v, line);
  if (c->nclasses == 0)
    return fail(msg, len, "plugstack argument controller_config: %s: no [class NAME] section", v);
  return 0;
}

static const struct {
  const char *key;
  int (*set)(struct pflex_spank_conf *, const char *, char *, size_t);
} conf_keys[] = {
    {"socket", set_socket},
    {"classes", set_classes},
    {"classes_file", set_classes_file},
    {"timeout_ms", set_timeout},
    {"on_error", set_on_error},
    {"mapping_dir", set_mapping_dir},
    {"controller_config", set_controller_config},
};

static int apply_arg(struct pflex_spank_conf *c, const char *arg, char *msg, size_t len) {
  const char *eq = strchr(arg, '=');
  size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
  for (size_t k = 0; k < sizeof conf_keys / sizeof conf_keys[0]; k++)
    if (strlen(conf_keys[k].key) == n && strncmp(arg, conf_keys[k].key, n) == 0) {
      if (!eq || !eq[1]) return fail(msg, len, "plugstack argument %s: needs a value", arg);
      return conf_keys[k].set(c, eq + 1, msg, len);
    }
  return fail(msg, len,
              "plugstack argument '%s': unknown (known: socket, classes, classes_file, "
              "timeout_ms, on_error, mapping_dir, controller_config)",
              arg);
}

int pflex_spank_conf_parse(struct pflex_spank_conf *c, int argc, char *const argv[], char *msg,
                           size_t msglen) {
  struct pflex_spank_conf next = *c;
  for (int k = 0; k < argc; k++) {
    int err = apply_arg(&next, argv[k], msg, msglen);
    if (err) return err;
  }
  *c = next;
  return 0;
}

void pflex_spank_conf_class_list(const struct pflex_spank_conf *c, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t k = 0; k < c->nclasses && used < len; k++) {
    int n = snprintf(buf + used, len - used, "%s%s", k ? ", " : "", c->classes[k]);
    if (n < 0) break;
    used += (size_t)n;
  }
}

int pflex_spank_opt_class(const struct pflex_spank_conf *c, const char *value,
                          struct pflex_spank_job_opts *o, char *msg, size_t msglen) {
  for (size_t k = 0; value && k < c->nclasses; k++)
    if (strcmp(value, c->classes[k]) == 0) {
      snprintf(o->class_name, sizeof o->class_name, "%s", value);
      o->has_class = true;
      return 0;
    }
  char list[PFLEX_SPANK_MSG_MAX];
  pflex_spank_conf_class_list(c, list, sizeof list);
  return fail(msg, msglen, "--pflex-class=%.40s: unknown class (known: %s)", value ? value : "",
              list);
}

/* A finite number making up the whole of s. */
static bool parse_number(const char *s, double *ret) {
  char *end;
  if (!s || !*s || isspace((unsigned char)*s)) return false;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v)) return false;
  *ret = v;
  return true;
}

int pflex_spank_opt_weight(const char *value, struct pflex_spank_job_opts *o, char *msg,
                           size_t msglen) {
  double v;
  if (!parse_number(value, &v) || !(v > 0 && v <= PFLEX_SPANK_WEIGHT_MAX))
    return fail(msg, msglen, "--pflex-weight=%.40s: want a number in (0, %g]", value ? value : "",
                PFLEX_SPANK_WEIGHT_MAX);
  o->weight = v;
  o->has_weight = true;
  return 0;
}

int pflex_spank_opt_min_tput(const char *value, struct pflex_spank_job_opts *o, char *msg,
                             size_t msglen) {
  double v;
  if (!parse_number(value, &v) || !(v > 0 && v <= 1))
    return fail(msg, msglen,
                "--pflex-min-throughput=%.40s: want a fraction of uncapped throughput in (0, 1]",
                value ? value : "");
  o->min_tput = v;
  o->has_min_tput = true;
  return 0;
}

/* One decimal index of at most 4 digits at *p; advances *p. */
static bool take_index(const char **p, unsigned *ret) {
  unsigned v = 0, digits = 0;
  while (isdigit((unsigned char)**p) && digits < 5) {
    v = v * 10 + (unsigned)(**p - '0');
    (*p)++;
    digits++;
  }
  *ret = v;
  return digits > 0 && digits < 5;
}

/* One item "N" or "LO-HI" at *p; advances *p. */
static bool take_item(const char **p, unsigned *lo, unsigned *hi) {
  if (!take_index(p, lo)) return false;
  *hi = *lo;
  if (**p == '-') {
    (*p)++;
    if (!take_index(p, hi)) return false;
  }
  return *hi >= *lo && *hi < 1024;
}

int pflex_spank_parse_gpus(const char *s, unsigned *ret_gpus, size_t max, size_t *ret_n, char *msg,
                           size_t msglen) {
  unsigned long long seen[1024 / 64] = {0}; /* indices < 1024 */
  const char *p = s;
  size_t n = 0;
  while (*p) {
    unsigned lo, hi;
    bool last;
    if (!take_item(&p, &lo, &hi) || (*p && (*p != ',' || !p[1])))
      return fail(msg, msglen, "SLURM_JOB_GPUS=%.80s: not a list of GPU indices", s);
    last = *p == '\0';
    for (unsigned g = lo; g <= hi; g++) {
      if (seen[g / 64] >> (g % 64) & 1) continue;
      if (n == max) {
        snprintf(msg, msglen, "SLURM_JOB_GPUS=%.80s: more than %zu GPUs", s, max);
        return -E2BIG;
      }
      seen[g / 64] |= 1ULL << (g % 64);
      n++;
    }
    if (!last) p++;
  }
  size_t k = 0;
  for (unsigned g = 0; g < 1024 && k < n; g++)
    if (seen[g / 64] >> (g % 64) & 1) ret_gpus[k++] = g;
  *ret_n = n;
  return 0;
}

bool pflex_spank_job_id_ok(const char *id) {
  size_t n = strlen(id);
  if (n == 0 || n > 64) return false;
  for (size_t k = 0; k < n; k++)
    if (!isalnum((unsigned char)id[k]) && !strchr("_+-", id[k])) return false;
  return true;
}
