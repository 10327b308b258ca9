/* The restore file (format in docs/gpu.md): reading it field by field with a
 * reason for every malformed record, and replacing it durably through the
 * state directory's descriptor (temporary file created O_EXCL|O_NOFOLLOW,
 * write, fsync, renameat, fsync of the directory). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/restore_internal.h"
#include "gpu/trusted_dir.h"
#include "pflex/error.h"

#define TMP_PREFIX PFLEX__RESTORE_TMP_PREFIX

/* ---- one record's fields ---- */
enum ftype { F_STR, F_UINT, F_INT64 };
struct field {
  const char *name;
  enum ftype type;
  bool required;
  size_t off, size; /* F_STR: buffer; numbers: the member */
  long long min, max;
};
#define STR(m, req, minlen)                                                                        \
  {#m, F_STR, req, offsetof(struct pflex_restore_record, m),                                       \
   sizeof((struct pflex_restore_record *)0)->m, minlen, 0}
#define NUM(key, m, t, req, lo, hi) {key, t, req, offsetof(struct pflex_restore_record, m), 0, lo, hi}

static const struct field fields[] = {
    STR(backend, true, 1),
    STR(uuid, true, 1),
    STR(pci_bus_id, false, 0),
    NUM("index", index, F_UINT, true, 0, UINT_MAX),
    NUM("original_limit_mw", original_mw, F_UINT, true, 1, UINT_MAX),
    NUM("set_limit_mw", set_mw, F_UINT, false, 1, UINT_MAX),
    NUM("prev_set_limit_mw", prev_set_mw, F_UINT, false, 1, UINT_MAX),
    NUM("pid", pid, F_INT64, false, 0, LLONG_MAX),
    NUM("time", time, F_INT64, false, LLONG_MIN, LLONG_MAX),
    STR(holder, false, 0),
};
#define NFIELDS (sizeof fields / sizeof fields[0])

/* A holder names a file in the state directory: nothing but a plain name. */
static bool holder_name_ok(const char *s) {
  if (!*s) return true;
  if (strncmp(s, "holder-", 7) != 0) return false;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
      return false;
  return true;
}

/* Reads one field into rec; a reason into rec->problem when it is malformed. */
static void read_field(json_t *o, const struct field *f, struct pflex_restore_record *rec) {
  json_t *j = json_object_get(o, f->name);
  char *p = rec->problem;
  size_t ps = sizeof rec->problem;
  if (!j) {
    if (f->required) snprintf(p, ps, "'%s' is missing", f->name);
    return;
  }
  if (f->type == F_STR) {
    const char *s = json_string_value(j);
    size_t len = s ? strlen(s) : 0;
    if (!json_is_string(j))
      snprintf(p, ps, "'%s' is not a string", f->name);
    else if (len < (size_t)f->min)
      snprintf(p, ps, "'%s' is empty", f->name);
    else if (len >= f->size)
      snprintf(p, ps, "'%s' is longer than %zu characters", f->name, f->size - 1);
    else
      memcpy((char *)rec + f->off, s, len + 1);
    return;
  }
  if (!json_is_integer(j)) {
    snprintf(p, ps, "'%s' is not an integer", f->name);
    return;
  }
  json_int_t v = json_integer_value(j);
  if (v < f->min || v > f->max) {
    snprintf(p, ps, "'%s' is %lld, outside %lld..%lld", f->name, (long long)v, f->min, f->max);
    return;
  }
  if (f->type == F_UINT)
    *(unsigned *)((char *)rec + f->off) = (unsigned)v;
  else
    *(long long *)((char *)rec + f->off) = (long long)v;
}

static void read_record(json_t *o, size_t i, struct pflex_restore_record *rec) {
  memset(rec, 0, sizeof *rec);
  if (!json_is_object(o)) {
    snprintf(rec->problem, sizeof rec->problem, "record %zu is not an object", i + 1);
    return;
  }
  char why[sizeof rec->problem] = "";
  for (size_t k = 0; k < NFIELDS; k++) {
    read_field(o, &fields[k], rec);
    if (rec->problem[0] && !why[0]) snprintf(why, sizeof why, "%s", rec->problem);
    rec->problem[0] = '\0';
  }
  if (!why[0] && !holder_name_ok(rec->holder))
    snprintf(why, sizeof why, "'holder' is not a holder lock name");
  if (why[0]) snprintf(rec->problem, sizeof rec->problem, "record %zu: %.128s", i + 1, why);
}

/* ---- the set of records ---- */
void pflex__recset_release(struct pflex__recset *s) {
  if (!s) return;
  for (size_t i = 0; s->raw && i < s->n; i++)
    json_decref(s->raw[i]);
  free(s->v);
  free(s->raw);
  memset(s, 0, sizeof *s);
}

long pflex__recset_add(struct pflex__recset *s) {
  struct pflex_restore_record *v = realloc(s->v, (s->n + 1) * sizeof *v);
  if (!v) return -ENOMEM;
  s->v = v;
  json_t **raw = realloc(s->raw, (s->n + 1) * sizeof *raw);
  if (!raw) return -ENOMEM;
  s->raw = raw;
  memset(&s->v[s->n], 0, sizeof s->v[s->n]);
  s->raw[s->n] = NULL;
  return (long)s->n++;
}

void pflex__recset_remove(struct pflex__recset *s, size_t i) {
  json_decref(s->raw[i]);
  memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof *s->v);
  memmove(&s->raw[i], &s->raw[i + 1], (s->n - i - 1) * sizeof *s->raw);
  s->n--;
}

long pflex__recset_find(const struct pflex__recset *s, const char *backend, const char *uuid) {
  for (size_t i = 0; i < s->n; i++)
    if (!s->v[i].problem[0] && strcmp(s->v[i].backend, backend) == 0 &&
        strcmp(s->v[i].uuid, uuid) == 0)
      return (long)i;
  return -1;
}

const struct pflex_restore_record *pflex__recset_blocking(const struct pflex__recset *s,
                                                          const char *uuid) {
  for (size_t i = 0; i < s->n; i++) {
    if (!s->v[i].problem[0]) continue;
    json_t *u = json_object_get(s->raw[i], "uuid");
    if (!json_is_string(u) || strcmp(json_string_value(u), uuid) == 0) return &s->v[i];
  }
  return NULL;
}

static int load_memory(struct pflex_restore *r, struct pflex__recset *s) {
  for (size_t i = 0; i < r->nmem; i++) {
    long at = pflex__recset_add(s);
    if (at < 0) return (int)at;
    s->v[at] = r->mem[i];
  }
  return 0;
}

static int load_json(json_t *root, struct pflex__recset *s) {
  json_t *fmt = json_object_get(root, "format"), *arr = json_object_get(root, "records");
  if (!json_is_object(root) || (fmt && !json_is_string(fmt)) ||
      (fmt && strcmp(json_string_value(fmt), "pflex-restore") != 0) || !json_is_array(arr))
    return -PFLEX_E_PARSE;
  for (size_t i = 0; i < json_array_size(arr); i++) {
    long at = pflex__recset_add(s);
    if (at < 0) return (int)at;
    json_t *o = json_array_get(arr, i);
    read_record(o, i, &s->v[at]);
    /* Kept to write back: a malformed record verbatim; a valid one's fields
     * that this version does not know (a newer pflex's). */
    if (json_is_object(o) || s->v[at].problem[0]) s->raw[at] = json_incref(o);
  }
  return 0;
}

int pflex__recset_load(struct pflex_restore *r, struct pflex__recset *ret) {
  struct pflex__recset s = {0};
  if (r->memory) {
    int err = load_memory(r, &s);
    if (err) pflex__recset_release(&s);
    else *ret = s;
    return err;
  }
  int fd = openat(r->dir_fd, PFLEX_RESTORE_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) return -errno;
    *ret = s; /* no file: no records */
    return 0;
  }
  int err = pflex__trusted_file_check(fd, r->path, NULL, 0);
  json_error_t jerr;
  /* Through a buffered stream: json_loadfd reads one byte per read(2), a
   * syscall per character of every record on each limit change. */
  FILE *f = err ? NULL : fdopen(fd, "r");
  if (!err && !f) err = -errno;
  json_t *root = f ? json_loadf(f, JSON_REJECT_DUPLICATES, &jerr) : NULL;
  if (f)
    fclose(f); /* closes fd */
  else
    close(fd);
  if (!err && !root) err = -PFLEX_E_PARSE;
  if (!err) err = load_json(root, &s);
  json_decref(root);
  if (err) pflex__recset_release(&s);
  else *ret = s;
  return err;
}

/* ---- writing ---- */
/* A valid record as JSON: its known fields from v, and any others the file
 * had (raw, may be NULL) kept as they were. */
static json_t *record_json(const struct pflex_restore_record *v, json_t *raw) {
  json_t *o = json_object();
  if (raw) {
    json_object_update(o, raw);
    for (size_t k = 0; k < NFIELDS; k++)
      json_object_del(o, fields[k].name);
  }
  json_object_set_new(o, "backend", json_string(v->backend));
  json_object_set_new(o, "uuid", json_string(v->uuid));
  json_object_set_new(o, "pci_bus_id", json_string(v->pci_bus_id));
  json_object_set_new(o, "index", json_integer(v->index));
  json_object_set_new(o, "original_limit_mw", json_integer(v->original_mw));
  if (v->set_mw) json_object_set_new(o, "set_limit_mw", json_integer(v->set_mw));
  if (v->prev_set_mw) json_object_set_new(o, "prev_set_limit_mw", json_integer(v->prev_set_mw));
  json_object_set_new(o, "pid", json_integer(v->pid));
  json_object_set_new(o, "time", json_integer(v->time));
  if (v->holder[0]) json_object_set_new(o, "holder", json_string(v->holder));
  return o;
}

static int write_all(int fd, const char *p, size_t len) {
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -errno;
    p += w, len -= (size_t)w;
  }
  return 0;
}

/* Replaces `name` in the state directory with text, durably. */
static int write_atomic(struct pflex_restore *r, const char *name, const char *text) {
  char tmp[256];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", name, (long)getpid(), r->tmp_seq++);
  int fd = openat(r->dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return -errno;
  int err = fchmod(fd, 0644) == 0 ? 0 : -errno; /* readable by 'pflex cap get' whatever the umask */
  if (!err) err = pflex__restore_fault(r, PFLEX_RESTORE_STEP_WRITE);
  if (!err) err = write_all(fd, text, strlen(text));
  if (!err) err = pflex__restore_fault(r, PFLEX_RESTORE_STEP_FSYNC);
  if (!err && fsync(fd) != 0) err = -errno;
  if (close(fd) != 0 && !err) err = -errno;
  if (!err) err = pflex__restore_fault(r, PFLEX_RESTORE_STEP_RENAME);
  if (!err && renameat(r->dir_fd, tmp, r->dir_fd, name) != 0) err = -errno;
  if (err) {
    unlinkat(r->dir_fd, tmp, 0);
    return err;
  }
  err = pflex__restore_fault(r, PFLEX_RESTORE_STEP_DIR_FSYNC);
  if (!err && fsync(r->dir_fd) != 0) err = errno == EINVAL ? 0 : -errno;
  return err;
}

int pflex__recset_store(struct pflex_restore *r, const struct pflex__recset *s) {
  if (r->memory) {
    struct pflex_restore_record *m = malloc((s->n ? s->n : 1) * sizeof *m);
    if (!m) return -ENOMEM;
    if (s->n) memcpy(m, s->v, s->n * sizeof *m);
    free(r->mem);
    r->mem = m;
    r->nmem = s->n;
    return 0;
  }
  json_t *root = json_object(), *arr = json_array();
  json_object_set_new(root, "format", json_string("pflex-restore"));
  json_object_set_new(root, "version", json_integer(1));
  json_object_set_new(root, "note", json_string("original GPU power limits; 'pflex cap restore' "
                                                "brings them back"));
  for (size_t i = 0; i < s->n; i++)
    json_array_append_new(arr, s->v[i].problem[0] ? json_incref(s->raw[i])
                                                  : record_json(&s->v[i], s->raw[i]));
  json_object_set_new(root, "records", arr);
  char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (!text) return -ENOMEM;
  size_t len = strlen(text);
  char *nl = realloc(text, len + 2);
  if (!nl) {
    free(text);
    return -ENOMEM;
  }
  memcpy(nl + len, "\n", 2);
  int err = write_atomic(r, PFLEX_RESTORE_FILE, nl);
  free(nl);
  return err;
}
