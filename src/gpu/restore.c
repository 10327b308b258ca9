/* Durable restore records (include/pflex/restore.h, file format in docs/gpu.md).
 *
 * Every read-modify-write of restore.json holds an exclusive flock on
 * restore.lock in the same directory, and every write is: temporary file,
 * fsync, rename, fsync of the directory. A limit is changed only after that
 * sequence returned success, so a crash at any point leaves either no change
 * or a change with its record on disk. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <libgen.h>

#include "gpu/backends.h" /* pflex__gpu_set_limit_unrecorded */
#include "io/csv_table.h" /* pflex__atomic_write_text: temporary file, fsync, rename, fsync */
#include "pflex/error.h"
#include "pflex/gpu.h"
#include "pflex/restore.h"

/* How long a change waits for another pflex process's restore lock before
 * giving up with -PFLEX_E_LOCKED; PFLEX_LOCK_TIMEOUT_S overrides (tests). A
 * holder keeps it only while it records and sets limits: milliseconds. */
#define LOCK_TIMEOUT_S 30.0

struct pflex_restore {
  double lock_timeout_s;
  char dir[4096];
  char path[4200];
  char lock_path[4200];
  int memory; /* memory-only store */
  struct pflex_restore_record *mem;
  size_t nmem;
};

static int fsync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  int err = fsync(fd) == 0 ? 0 : -errno;
  close(fd);
  return err;
}

int pflex_restore_open(const char *state_dir, struct pflex_restore **ret_restore) {
  if (!state_dir || !*state_dir) state_dir = getenv("PFLEX_STATE_DIR");
  if (!state_dir || !*state_dir) state_dir = PFLEX_RESTORE_DEFAULT_DIR;
  if (strlen(state_dir) >= 4000) return -ENAMETOOLONG;
  if (mkdir(state_dir, 0755) == 0) {
    /* A new directory's own entry must be durable too, or a crash could lose
     * the directory with the first record in it. */
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", state_dir);
    int err = fsync_dir(dirname(parent));
    if (err) return err;
  } else if (errno != EEXIST) {
    return -errno;
  }
  struct stat st;
  if (stat(state_dir, &st) != 0) return -errno;
  if (!S_ISDIR(st.st_mode)) return -ENOTDIR;
  struct pflex_restore *r = calloc(1, sizeof *r);
  if (!r) return -ENOMEM;
  snprintf(r->dir, sizeof r->dir, "%s", state_dir);
  r->lock_timeout_s = LOCK_TIMEOUT_S;
  const char *t = getenv("PFLEX_LOCK_TIMEOUT_S");
  if (t && *t) {
    char *end;
    double v = strtod(t, &end);
    if (!*end && v >= 0 && v <= 86400) r->lock_timeout_s = v;
  }
  snprintf(r->path, sizeof r->path, "%s/%s", state_dir, PFLEX_RESTORE_FILE);
  snprintf(r->lock_path, sizeof r->lock_path, "%s/restore.lock", state_dir);
  *ret_restore = r;
  return 0;
}

int pflex_restore_open_memory(struct pflex_restore **ret_restore) {
  struct pflex_restore *r = calloc(1, sizeof *r);
  if (!r) return -ENOMEM;
  r->memory = 1;
  *ret_restore = r;
  return 0;
}

void pflex_restore_free(struct pflex_restore *restore) {
  if (!restore) return;
  free(restore->mem);
  free(restore);
}

const char *pflex_restore_path(const struct pflex_restore *restore) {
  return restore->memory ? "" : restore->path;
}

static int lock_open(struct pflex_restore *r, int *ret_fd) {
  if (r->memory) {
    *ret_fd = -1;
    return 0;
  }
  int fd = open(r->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  /* A user who may not write the state directory may still read the records
   * (pflex cap get as non-root): flock needs no write access. Writing then
   * fails on the temporary file, as it should. */
  if (fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM))
    fd = open(r->lock_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  /* Wait for a holder in 20 ms steps, but not forever: a hung pflex must not
   * block 'pflex cap restore' without a word. */
  double waited = 0;
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = -errno;
    if (err != -EWOULDBLOCK && err != -EINTR) {
      close(fd);
      return err;
    }
    if (waited >= r->lock_timeout_s) {
      close(fd);
      return -PFLEX_E_LOCKED;
    }
    nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    waited += 0.02;
  }
  *ret_fd = fd;
  return 0;
}

static void lock_close(int fd) {
  if (fd < 0) return;
  flock(fd, LOCK_UN);
  close(fd);
}

static void copy_str(char *dst, size_t size, const char *src) {
  snprintf(dst, size, "%s", src ? src : "");
}

/* A limit in mW as the file states it, or 0 (unknown) when it is no integer
 * in 1..UINT_MAX: a larger one must not wrap to another limit. */
static unsigned limit_mw(json_t *v) {
  json_int_t x = json_is_integer(v) ? json_integer_value(v) : 0;
  return x > 0 && x <= (json_int_t)UINT_MAX ? (unsigned)x : 0;
}

/* Reads the records on disk (none when the file does not exist). */
static int load(struct pflex_restore *r, struct pflex_restore_record **ret, size_t *ret_n) {
  if (r->memory) {
    struct pflex_restore_record *v = malloc((r->nmem ? r->nmem : 1) * sizeof *v);
    if (!v) return -ENOMEM;
    if (r->nmem) memcpy(v, r->mem, r->nmem * sizeof *v);
    *ret = v;
    *ret_n = r->nmem;
    return 0;
  }
  json_error_t jerr;
  json_t *root = json_load_file(r->path, 0, &jerr);
  if (!root) {
    if (access(r->path, F_OK) != 0 && errno == ENOENT) {
      *ret = calloc(1, sizeof **ret);
      if (!*ret) return -ENOMEM;
      *ret_n = 0;
      return 0;
    }
    return -PFLEX_E_PARSE;
  }
  json_t *arr = json_object_get(root, "records");
  if (!json_is_array(arr)) {
    json_decref(root);
    return -PFLEX_E_PARSE;
  }
  size_t n = json_array_size(arr);
  struct pflex_restore_record *v = calloc(n ? n : 1, sizeof *v);
  if (!v) {
    json_decref(root);
    return -ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *o = json_array_get(arr, i);
    json_t *uuid = json_object_get(o, "uuid");
    v[i].original_mw = limit_mw(json_object_get(o, "original_limit_mw"));
    if (!json_is_string(uuid) || v[i].original_mw == 0) {
      free(v);
      json_decref(root);
      return -PFLEX_E_PARSE;
    }
    copy_str(v[i].backend, sizeof v[i].backend, json_string_value(json_object_get(o, "backend")));
    copy_str(v[i].uuid, sizeof v[i].uuid, json_string_value(uuid));
    copy_str(v[i].pci_bus_id, sizeof v[i].pci_bus_id,
             json_string_value(json_object_get(o, "pci_bus_id")));
    v[i].index = (unsigned)json_integer_value(json_object_get(o, "index"));
    /* absent in older files: unknown */
    v[i].set_mw = limit_mw(json_object_get(o, "set_limit_mw"));
    v[i].prev_set_mw = limit_mw(json_object_get(o, "prev_set_limit_mw"));
    v[i].pid = (long long)json_integer_value(json_object_get(o, "pid"));
    v[i].time = (long long)json_integer_value(json_object_get(o, "time"));
  }
  json_decref(root);
  *ret = v;
  *ret_n = n;
  return 0;
}


/* Writes the records durably: temporary file, fsync, rename, directory fsync. */
static int store(struct pflex_restore *r, const struct pflex_restore_record *v, size_t n) {
  if (r->memory) {
    struct pflex_restore_record *m = malloc((n ? n : 1) * sizeof *m);
    if (!m) return -ENOMEM;
    if (n) memcpy(m, v, n * sizeof *m);
    free(r->mem);
    r->mem = m;
    r->nmem = n;
    return 0;
  }
  json_t *root = json_object(), *arr = json_array();
  json_object_set_new(root, "format", json_string("pflex-restore"));
  json_object_set_new(root, "version", json_integer(1));
  json_object_set_new(root, "note",
                      json_string("original GPU power limits; 'pflex cap restore' "
                                  "brings them back"));
  for (size_t i = 0; i < n; i++) {
    json_t *o = json_object();
    json_object_set_new(o, "backend", json_string(v[i].backend));
    json_object_set_new(o, "uuid", json_string(v[i].uuid));
    json_object_set_new(o, "pci_bus_id", json_string(v[i].pci_bus_id));
    json_object_set_new(o, "index", json_integer(v[i].index));
    json_object_set_new(o, "original_limit_mw", json_integer(v[i].original_mw));
    if (v[i].set_mw) json_object_set_new(o, "set_limit_mw", json_integer(v[i].set_mw));
    if (v[i].prev_set_mw)
      json_object_set_new(o, "prev_set_limit_mw", json_integer(v[i].prev_set_mw));
    json_object_set_new(o, "pid", json_integer(v[i].pid));
    json_object_set_new(o, "time", json_integer(v[i].time));
    json_array_append_new(arr, o);
  }
  json_object_set_new(root, "records", arr);
  char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (!text) return -ENOMEM;
  int err = pflex__atomic_write_text(r->path, text);
  free(text);
  return err;
}

static long find_record(const struct pflex_restore_record *v, size_t n, const char *backend,
                        const char *uuid) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(v[i].backend, backend) == 0 && strcmp(v[i].uuid, uuid) == 0) return (long)i;
  return -1;
}

/* Records GPU `index` unless it already has a record, and with set_mw
 * notes the limit pflex is about to set (*set_mw receives the one noted
 * before, 0 if none); the caller holds the lock. */
/* True when the record was made by another pflex process that is still
 * running: a sweep, which changes its GPUs' limits again and restores them
 * when it ends. A short-lived 'pflex cap set' has exited by the time anyone
 * else looks. The process name guards against a reused pid (Linux /proc). */
static bool held_by_other(const struct pflex_restore_record *rec) {
  if (rec->pid <= 0 || rec->pid == (long long)getpid()) return false;
  char path[64], comm[32] = {0};
  snprintf(path, sizeof path, "/proc/%lld/comm", rec->pid);
  FILE *f = fopen(path, "r");
  if (!f) return false; /* gone */
  bool pflex = fgets(comm, sizeof comm, f) && strncmp(comm, "pflex", 5) == 0;
  fclose(f);
  return pflex;
}

static int record_locked(struct pflex_restore *r, struct pflex_gpu *gpu, unsigned index,
                         unsigned *set_mw) {
  struct pflex_gpu_info info;
  int err = pflex_gpu_info(gpu, index, &info);
  if (err) return err;
  if (!info.uuid[0]) return -PFLEX_E_RESTORE; /* cannot find it again without an identity */
  struct pflex_restore_record *v = NULL;
  size_t n = 0;
  err = load(r, &v, &n);
  if (err) return err;
  const char *backend = pflex_gpu_backend_name(gpu);
  long at = find_record(v, n, backend, info.uuid); /* the older original wins */
  if (at >= 0 && held_by_other(&v[at])) {
    err = -PFLEX_E_HELD; /* changing it under a running sweep would corrupt its runs */
    goto out;
  }
  if (at < 0) {
    unsigned mw;
    err = pflex_gpu_get_limit(gpu, index, &mw);
    if (err) goto out;
    struct pflex_restore_record *nv = realloc(v, (n + 1) * sizeof *nv);
    if (!nv) {
      err = -ENOMEM;
      goto out;
    }
    v = nv;
    at = (long)n++;
    memset(&v[at], 0, sizeof v[at]);
    copy_str(v[at].backend, sizeof v[at].backend, backend);
    copy_str(v[at].uuid, sizeof v[at].uuid, info.uuid);
    copy_str(v[at].pci_bus_id, sizeof v[at].pci_bus_id, info.pci_bus_id);
    v[at].index = index;
    v[at].original_mw = mw;
    v[at].pid = (long long)getpid();
    v[at].time = (long long)time(NULL);
  } else if (!set_mw || v[at].set_mw == *set_mw) {
    if (set_mw) *set_mw = v[at].set_mw;
    goto out; /* nothing new to write */
  }
  if (set_mw) {
    /* The one before stays known too: a crash between this note and the
     * change leaves the GPU at it, and that is still pflex's own limit. */
    unsigned before = v[at].set_mw;
    if (before) v[at].prev_set_mw = before;
    v[at].set_mw = *set_mw;
    *set_mw = before;
  }
  err = store(r, v, n);
out:
  free(v);
  return err;
}

int pflex_restore_record(struct pflex_restore *r, struct pflex_gpu *gpu, unsigned index) {
  int lock;
  int err = lock_open(r, &lock);
  if (err) return err;
  err = record_locked(r, gpu, index, NULL);
  lock_close(lock);
  return err;
}

int pflex_restore_set_limit(struct pflex_restore *r, struct pflex_gpu *gpu, unsigned index,
                            unsigned mw) {
  /* The lock is held from the record to the change: otherwise a concurrent
   * 'pflex cap restore' could clear the record between the two, and the
   * change would be left without one. The limit pflex sets is noted first, so
   * that a restore can tell it from a later change by someone else. */
  int lock;
  int err = lock_open(r, &lock);
  if (err) return err;
  unsigned noted = mw;
  err = record_locked(r, gpu, index, &noted);
  if (!err) {
    err = pflex__gpu_set_limit_unrecorded(gpu, index, mw);
    /* The change did not happen: note again what pflex had set before (best
     * effort; a stale note only makes a later restore ask for --force). */
    if (err && noted != mw) record_locked(r, gpu, index, &noted);
  }
  lock_close(lock);
  return err;
}

int pflex_restore_list(struct pflex_restore *r, struct pflex_restore_record **ret_records,
                       size_t *ret_n) {
  int lock;
  int err = lock_open(r, &lock);
  if (err) return err;
  err = load(r, ret_records, ret_n);
  lock_close(lock);
  return err;
}

/* The current index of the GPU with this UUID, or -ENODEV. */
static int locate(struct pflex_gpu *gpu, const char *uuid, unsigned *ret_index) {
  unsigned n;
  int err = pflex_gpu_count(gpu, &n);
  if (err) return err;
  int first_err = 0;
  for (unsigned i = 0; i < n; i++) {
    struct pflex_gpu_info info;
    err = pflex_gpu_info(gpu, i, &info);
    if (err) {
      if (!first_err) first_err = err;
      continue;
    }
    if (strcmp(info.uuid, uuid) == 0) {
      *ret_index = i;
      return 0;
    }
  }
  /* A GPU we could not identify may be the one: report its error, not absence. */
  return first_err ? first_err : -ENODEV;
}

int pflex_restore_apply(struct pflex_restore *r, struct pflex_gpu *gpu, const unsigned *only,
                        size_t nonly, unsigned flags, struct pflex_restore_result **ret_results,
                        size_t *ret_n) {
  int lock;
  int err = lock_open(r, &lock);
  if (err) return err;
  struct pflex_restore_record *v = NULL, *keep = NULL;
  struct pflex_restore_result *res = NULL;
  size_t n = 0, nkeep = 0, nres = 0;
  err = load(r, &v, &n);
  if (err) goto out;
  keep = calloc(n ? n : 1, sizeof *keep);
  res = calloc(n ? n : 1, sizeof *res);
  if (!keep || !res) {
    err = -ENOMEM;
    goto out;
  }
  const char *backend = pflex_gpu_backend_name(gpu);
  int first_err = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(v[i].backend, backend) != 0) {
      keep[nkeep++] = v[i];
      continue;
    }
    unsigned idx = 0;
    int e = locate(gpu, v[i].uuid, &idx);
    int selected = 1;
    if (nonly) {
      /* A GPU that cannot be identified now is judged by its recorded index,
       * so that a caller restoring "its" GPUs hears about the failure. */
      unsigned at = e ? v[i].index : idx;
      selected = 0;
      for (size_t k = 0; k < nonly; k++)
        if (only[k] == at) selected = 1;
    }
    if (!selected) {
      keep[nkeep++] = v[i];
      continue;
    }
    struct pflex_restore_result *x = &res[nres++];
    x->record = v[i];
    /* A running sweep restores its own GPUs; restoring them under it would
     * corrupt its runs. --force still does (e.g. a hung sweep). */
    if (!e && !(flags & PFLEX_RESTORE_FORCE) && held_by_other(&v[i])) e = -PFLEX_E_HELD;
    if (!e) {
      x->found = 1;
      x->index = idx;
      e = pflex_gpu_get_limit(gpu, idx, &x->was_mw);
      /* Neither the original nor what pflex last set: someone else changed
       * it since (an operator, a facility's emergency cap). Leave it. */
      if (!e && !(flags & PFLEX_RESTORE_FORCE) && v[i].set_mw && x->was_mw != v[i].original_mw &&
          x->was_mw != v[i].set_mw && x->was_mw != v[i].prev_set_mw) {
        x->changed = 1;
        e = -EBUSY;
      }
      if (!e && x->was_mw != v[i].original_mw)
        e = pflex__gpu_set_limit_unrecorded(gpu, idx, v[i].original_mw);
      /* Trust the device, not the call: read back what it now enforces. */
      unsigned now_mw;
      if (!e) e = pflex_gpu_get_limit(gpu, idx, &now_mw);
      if (!e && now_mw != v[i].original_mw) e = -EIO;
    }
    x->err = e;
    if (e) {
      keep[nkeep++] = v[i];
      if (!first_err) first_err = e;
    }
  }
  if (nkeep != n) err = store(r, keep, nkeep);
  if (!err) err = first_err;
  *ret_results = res;
  *ret_n = nres;
  res = NULL;
out:
  free(res);
  free(keep);
  free(v);
  lock_close(lock);
  return err;
}
