/* The restore store itself (restore_internal.h): opening the trusted state
 * directory, restore.lock (shared for readers, exclusive for writers, with a
 * bounded wait), the per-holder locks that say a long-lived pflex (a sweep,
 * pflexd) still owns its records, stale temporary files of killed writers,
 * and the test fault hook. Record reading and writing is restore_file.c. */
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
void pflex__restore_remove_stale(struct pflex_restore *r) {
  int fd = openat(r->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  /* Under the write lock no other pflex is between creating and renaming
   * one, so every temporary file left is a killed writer's. */
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (strncmp(e->d_name, PFLEX__RESTORE_TMP_PREFIX, strlen(PFLEX__RESTORE_TMP_PREFIX)) == 0)
      unlinkat(r->dir_fd, e->d_name, 0);
  closedir(d);
}
