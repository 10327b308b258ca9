/* Internal to src/gpu: the restore store shared by restore.c (open, records,
 * restore), restore_file.c (the file format and its durable writes) and
 * apply_limits.c (the all-or-nothing change). */
#ifndef PFLEX_GPU_RESTORE_INTERNAL_H
#define PFLEX_GPU_RESTORE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "pflex/restore.h"

struct pflex_restore {
  double lock_timeout_s;
  bool hold;
  int dir_fd; /* the checked state directory; every file is opened relative to it */
  char dir[4096];
  char path[4200];
  int holder_fd; /* this process's holder lock (hold), or -1 */
  char holder[64];
  pflex_restore_fault_fn fault;
  void *fault_ud;
  int memory; /* memory-only store */
  struct pflex_restore_record *mem;
  size_t nmem;
  unsigned tmp_seq;
};

/* The records as read: malformed ones (record.problem set) keep their JSON
 * object so that they are written back verbatim. */
struct pflex__recset {
  struct pflex_restore_record *v;
  json_t **raw; /* raw[i]: the malformed object of v[i], else NULL */
  size_t n;
};

/* The test hook at `step` (0 when none). */
int pflex__restore_fault(struct pflex_restore *r, enum pflex_restore_step step);

/* Takes restore.lock (write: for a change; else a reader, which reads without
 * the lock when it may not take it: *ret_fd -1). Under a write lock, stale
 * temporary files and dead holders' lock files are removed. */
int pflex__restore_lock(struct pflex_restore *r, bool write, int *ret_fd);
void pflex__restore_unlock(int fd);

int pflex__recset_load(struct pflex_restore *r, struct pflex__recset *ret);
int pflex__recset_store(struct pflex_restore *r, const struct pflex__recset *s);
void pflex__recset_release(struct pflex__recset *s);
/* Appends a zeroed record; returns its position or -ENOMEM. */
long pflex__recset_add(struct pflex__recset *s);
/* Removes record i (keeping the order). */
void pflex__recset_remove(struct pflex__recset *s, size_t i);
/* The valid record of (backend, uuid), or -1. */
long pflex__recset_find(const struct pflex__recset *s, const char *backend, const char *uuid);
/* A malformed record that may be this GPU's (same uuid, or uuid unreadable), or NULL. */
const struct pflex_restore_record *pflex__recset_blocking(const struct pflex__recset *s,
                                                          const char *uuid);

/* True when rec names a holder other than this store that still holds its lock. */
bool pflex__restore_held_by_other(struct pflex_restore *r, const struct pflex_restore_record *rec);
/* With opts.hold: creates and locks this process's holder file (under the write lock). */
int pflex__restore_hold(struct pflex_restore *r);

/* Removes the temporary files a killed writer left (under the write lock). */
void pflex__restore_remove_stale(struct pflex_restore *r);

#endif
