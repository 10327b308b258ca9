/* Durable restore records (include/pflex/restore.h, file format in docs/gpu.md).
 *
 * Every read-modify-write of restore.json holds an exclusive flock on
 * restore.lock in the same directory, and every write is: temporary file,
 * fsync, rename, fsync of the directory (restore_file.c). A limit is changed
 * only after that sequence returned success (apply_limits.c), so a crash at
 * any point leaves either no change or a change with its record on disk. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpu/backends.h" /* pflex__gpu_set_limit_unrecorded */
#include "gpu/restore_internal.h"
#include "gpu/trusted_dir.h"
#include "pflex/error.h"
#include "pflex/gpu.h"
#include "pflex/restore.h"

#define LOCK_FILE "restore.lock"
#define HOLDER_PREFIX "holder-"

void pflex_restore_opts_init(struct pflex_restore_opts *o) {
  memset(o, 0, sizeof *o);
  o->lock_timeout_s = -1;
}

int pflex_restore_open_opts(const struct pflex_restore_opts *o, struct pflex_restore **ret,
                            char *errbuf, size_t errlen) {
  if (errbuf && errlen) errbuf[0] = '\0';
  const char *dir = o->state_dir && *o->state_dir ? o->state_dir : PFLEX_RESTORE_DEFAULT_DIR;
  if (strlen(dir) >= 4000) return -ENAMETOOLONG;
  int fd;
  int err = pflex__trusted_dir_open(dir, !o->no_create, &fd, errbuf, errlen);
  if (err) return err;
  struct pflex_restore *r = calloc(1, sizeof *r);
  if (!r) {
    close(fd);
    return -ENOMEM;
  }
  r->dir_fd = fd;
  r->holder_fd = -1;
  r->hold = o->hold;
  r->lock_timeout_s = o->lock_timeout_s >= 0 ? o->lock_timeout_s : PFLEX_RESTORE_LOCK_TIMEOUT_S;
  snprintf(r->dir, sizeof r->dir, "%s", dir);
  snprintf(r->path, sizeof r->path, "%s/%s", dir, PFLEX_RESTORE_FILE);
  *ret = r;
  return 0;
}

int pflex_restore_open(const char *state_dir, struct pflex_restore **ret_restore) {
  struct pflex_restore_opts o;
  pflex_restore_opts_init(&o);
  o.state_dir = state_dir;
  return pflex_restore_open_opts(&o, ret_restore, NULL, 0);
}

int pflex_restore_open_memory(struct pflex_restore **ret_restore) {
  struct pflex_restore *r = calloc(1, sizeof *r);
  if (!r) return -ENOMEM;
  r->memory = 1;
  r->dir_fd = r->holder_fd = -1;
  *ret_restore = r;
  return 0;
}

void pflex_restore_free(struct pflex_restore *r) {
  if (!r) return;
  if (r->holder_fd >= 0) {
    unlinkat(r->dir_fd, r->holder, 0);
    close(r->holder_fd);
  }
  if (r->dir_fd >= 0) close(r->dir_fd);
  free(r->mem);
  free(r);
}

const char *pflex_restore_path(const struct pflex_restore *r) {
  return r->memory ? "" : r->path;
}

void pflex_restore_set_fault(struct pflex_restore *r, pflex_restore_fault_fn fn, void *ud) {
  r->fault = fn;
  r->fault_ud = ud;
}

int pflex__restore_fault(struct pflex_restore *r, enum pflex_restore_step step) {
  return r->fault ? r->fault(step, r->fault_ud) : 0;
}

/* ---- holders: a process that keeps its GPUs holds a lock file while it lives ---- */
int pflex__restore_hold(struct pflex_restore *r) {
  if (!r->hold || r->memory || r->holder_fd >= 0) return 0;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(r->holder, sizeof r->holder, HOLDER_PREFIX "%ld-%lld-%ld.lock", (long)getpid(),
           (long long)ts.tv_sec, (long)ts.tv_nsec);
  int fd = openat(r->dir_fd, r->holder, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return -errno;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = -errno;
    unlinkat(r->dir_fd, r->holder, 0);
    close(fd);
    return err;
  }
  r->holder_fd = fd;
  return 0;
}

/* 1: a live process holds `name`; 0: nobody does; < 0: cannot tell. */
static int holder_live(struct pflex_restore *r, const char *name) {
  int fd = openat(r->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : -errno;
  int live = flock(fd, LOCK_SH | LOCK_NB) == 0 ? 0 : errno == EWOULDBLOCK ? 1 : -errno;
  close(fd);
  return live;
}

bool pflex__restore_held_by_other(struct pflex_restore *r, const struct pflex_restore_record *rec) {
  if (r->memory || !rec->holder[0]) return false;
  if (r->holder_fd >= 0 && strcmp(rec->holder, r->holder) == 0) return false;
  /* Cannot tell (e.g. not allowed to open it): a holder is not assumed. */
  return holder_live(r, rec->holder) == 1;
}

/* Under the write lock: holder files nobody holds any more are a dead
 * holder's (holders are created under the same lock, then locked at once). */
static void remove_dead_holders(struct pflex_restore *r) {
  int fd = openat(r->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (strncmp(e->d_name, HOLDER_PREFIX, strlen(HOLDER_PREFIX)) != 0) continue;
    if (r->holder_fd >= 0 && strcmp(e->d_name, r->holder) == 0) continue;
    if (holder_live(r, e->d_name) == 0) unlinkat(r->dir_fd, e->d_name, 0);
  }
  closedir(d);
}

/* ---- restore.lock ---- */
static int lock_wait(struct pflex_restore *r, int fd, int how) {
  /* Wait for a holder in 20 ms steps, but not forever: a hung pflex must not
   * block 'pflex cap restore' without a word. */
  double waited = 0;
  while (flock(fd, how | LOCK_NB) != 0) {
    int err = -errno;
    if (err != -EWOULDBLOCK && err != -EINTR) return err;
    if (waited >= r->lock_timeout_s) return -PFLEX_E_LOCKED;
    nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    waited += 0.02;
  }
  return 0;
}

int pflex__restore_lock(struct pflex_restore *r, bool write, int *ret_fd) {
  *ret_fd = -1;
  if (r->memory) return 0;
  int fd;
  if (write) {
    int err = pflex__restore_fault(r, PFLEX_RESTORE_STEP_LOCK);
    if (err) return err;
    /* 0600: a user who could open it could flock it and stall root. */
    fd = openat(r->dir_fd, LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return -errno; /* EROFS, EACCES: what it is, not a later ENOENT */
  } else {
    fd = openat(r->dir_fd, LOCK_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    /* A reader that may not lock (not root; no lock file yet) reads without:
     * restore.json is only ever replaced whole by rename. */
    if (fd < 0) return errno == ENOENT || errno == EACCES || errno == EPERM ? 0 : -errno;
  }
  int err = pflex__trusted_file_check(fd, LOCK_FILE, NULL, 0);
  if (!err) err = lock_wait(r, fd, write ? LOCK_EX : LOCK_SH);
  if (err) {
    close(fd);
    return err;
  }
  if (write) {
    pflex__restore_remove_stale(r);
    remove_dead_holders(r);
  }
  *ret_fd = fd;
  return 0;
}

void pflex__restore_unlock(int fd) {
  if (fd < 0) return;
  flock(fd, LOCK_UN);
  close(fd);
}

/* ---- reading and recording ---- */
int pflex_restore_list(struct pflex_restore *r, struct pflex_restore_record **ret_records,
                       size_t *ret_n) {
  int lock;
  int err = pflex__restore_lock(r, false, &lock);
  if (err) return err;
  struct pflex__recset s;
  err = pflex__recset_load(r, &s);
  pflex__restore_unlock(lock);
  if (err) return err;
  struct pflex_restore_record *v = malloc((s.n ? s.n : 1) * sizeof *v);
  if (!v) {
    pflex__recset_release(&s);
    return -ENOMEM;
  }
  if (s.n) memcpy(v, s.v, s.n * sizeof *v);
  *ret_records = v;
  *ret_n = s.n;
  pflex__recset_release(&s);
  return 0;
}

int pflex_restore_record(struct pflex_restore *r, struct pflex_gpu *gpu, unsigned index) {
  unsigned mw;
  int err = pflex_gpu_get_limit(gpu, index, &mw);
  if (err) return err;
  /* Setting the limit it has: records it (if new) and changes nothing. */
  return pflex_restore_set_limit(r, gpu, index, mw);
}

int pflex_restore_set_limit(struct pflex_restore *r, struct pflex_gpu *gpu, unsigned index,
                            unsigned mw) {
  struct pflex_limit_change c = {.index = index, .mw = mw};
  return pflex_restore_apply_limits(r, gpu, &c, 1, 0, NULL);
}

/* ---- restoring ---- */

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

static bool listed(const unsigned *only, size_t nonly, unsigned i) {
  for (size_t k = 0; k < nonly; k++)
    if (only[k] == i) return true;
  return false;
}

/* Whether a malformed record concerns this restore: its backend (when
 * readable) is this one and, with `only`, its GPU is selected or unknown. */
static bool malformed_selected(struct pflex_gpu *gpu, json_t *raw, const unsigned *only,
                               size_t nonly) {
  json_t *b = json_object_get(raw, "backend"), *u = json_object_get(raw, "uuid");
  if (json_is_string(b) && strcmp(json_string_value(b), pflex_gpu_backend_name(gpu)) != 0)
    return false;
  unsigned at;
  if (!nonly || !json_is_string(u) || locate(gpu, json_string_value(u), &at) != 0) return true;
  return listed(only, nonly, at);
}

/* Restores one valid record; x->err says how it went. */
static void restore_one(struct pflex_restore *r, struct pflex_gpu *gpu, unsigned flags,
                        int located, unsigned idx, struct pflex_restore_result *x) {
  const struct pflex_restore_record *rec = &x->record;
  int e = located;
  /* A running sweep restores its own GPUs; restoring them under it would
   * corrupt its runs. --force still does (e.g. a hung sweep). */
  if (!e && !(flags & PFLEX_RESTORE_FORCE) && pflex__restore_held_by_other(r, rec))
    e = -PFLEX_E_HELD;
  if (!e) {
    x->found = 1;
    x->index = idx;
    e = pflex_gpu_get_limit(gpu, idx, &x->was_mw);
    /* Neither the original nor what pflex last set: someone else changed
     * it since (an operator, a facility's emergency cap). Leave it. */
    if (!e && !(flags & PFLEX_RESTORE_FORCE) && rec->set_mw && x->was_mw != rec->original_mw &&
        x->was_mw != rec->set_mw && x->was_mw != rec->prev_set_mw) {
      x->changed = 1;
      e = -EBUSY;
    }
    if (!e && x->was_mw != rec->original_mw)
      e = pflex__gpu_set_limit_unrecorded(gpu, idx, rec->original_mw);
    /* Trust the device, not the call: read back what it now enforces. */
    unsigned now_mw;
    if (!e) e = pflex_gpu_get_limit(gpu, idx, &now_mw);
    if (!e && now_mw != rec->original_mw) e = -EIO;
    if (!e) x->restored = 1;
  }
  x->err = e;
}

int pflex_restore_apply(struct pflex_restore *r, struct pflex_gpu *gpu, const unsigned *only,
                        size_t nonly, unsigned flags, struct pflex_restore_result **ret_results,
                        size_t *ret_n) {
  int lock;
  int err = pflex__restore_lock(r, true, &lock);
  if (err) return err;
  struct pflex__recset s;
  err = pflex__recset_load(r, &s);
  if (err) {
    pflex__restore_unlock(lock);
    return err;
  }
  struct pflex_restore_result *res = calloc(s.n ? s.n : 1, sizeof *res);
  bool *clear = calloc(s.n ? s.n : 1, sizeof *clear);
  if (!res || !clear) {
    free(res);
    free(clear);
    pflex__recset_release(&s);
    pflex__restore_unlock(lock);
    return -ENOMEM;
  }
  const char *backend = pflex_gpu_backend_name(gpu);
  size_t nres = 0, ncleared = 0;
  int first_err = 0;
  for (size_t i = 0; i < s.n; i++) {
    struct pflex_restore_result *x = &res[nres];
    if (s.raw[i]) { /* malformed: reported, kept, never used */
      if (!malformed_selected(gpu, s.raw[i], only, nonly)) continue;
      x->record = s.v[i];
      x->err = -PFLEX_E_PARSE;
    } else {
      if (strcmp(s.v[i].backend, backend) != 0) continue;
      unsigned idx = 0;
      int e = locate(gpu, s.v[i].uuid, &idx);
      /* A GPU that cannot be identified now is judged by its recorded index,
       * so that a caller restoring "its" GPUs hears about the failure. */
      if (nonly && !listed(only, nonly, e ? s.v[i].index : idx)) continue;
      x->record = s.v[i];
      restore_one(r, gpu, flags, e, idx, x);
    }
    nres++;
    if (x->err && !first_err) first_err = x->err;
    if (!x->err) clear[i] = true, ncleared++;
  }
  for (size_t i = s.n; i-- > 0;)
    if (clear[i]) pflex__recset_remove(&s, i);
  free(clear);
  if (ncleared) {
    err = pflex__recset_store(r, &s);
    /* The limits are back but the records stay: say so for each. */
    for (size_t k = 0; err && k < nres; k++)
      if (!res[k].err) res[k].err = err;
  }
  if (!err) err = first_err;
  *ret_results = res;
  *ret_n = nres;
  pflex__recset_release(&s);
  pflex__restore_unlock(lock);
  return err;
}
