/* Durable restore records: every power-limit change can be undone (docs/gpu.md).
 *
 * Before the first change to a GPU's limit, its original limit and identity
 * (backend, UUID, index, PCI bus id) are written to restore.json in the state
 * directory (default /var/lib/pflex; programs pass --state-dir or
 * PFLEX_STATE_DIR): a temporary file (O_EXCL, no symlinks followed) is written
 * and fsync'd, renamed over restore.json, and the directory is fsync'd. Only
 * then is the limit changed. A record is kept until its GPU has been brought
 * back, so `pflex cap restore` works after anything, kill -9 included.
 *
 * The state directory must be trustworthy, because root restores what is in
 * it: owned by root or the calling user, not writable by group or others, and
 * every directory above it likewise (a sticky directory such as /tmp may be
 * world-writable), as sshd's StrictModes demands. Concurrent pflex processes
 * serialise on restore.lock. A process that keeps its GPUs (a sweep, pflexd:
 * opts.hold) holds a lock file of its own while it lives; a GPU whose record
 * names such a live holder is refused with -PFLEX_E_HELD, both for changes
 * and for restore (unless forced): that process restores it when it ends.
 *
 * pflex_restore_apply_limits() is the one way pflex changes limits. */
#ifndef PFLEX_RESTORE_H
#define PFLEX_RESTORE_H

#include <stdbool.h>
#include <stddef.h>

#include "pflex/gpu.h"

#define PFLEX_RESTORE_DEFAULT_DIR "/var/lib/pflex"
#define PFLEX_RESTORE_FILE "restore.json"
#define PFLEX_RESTORE_LOCK_TIMEOUT_S 30.0

struct pflex_restore;

/* One GPU's original state. */
struct pflex_restore_record {
  char backend[16];
  char uuid[96];
  char pci_bus_id[32];
  unsigned index;       /* index when recorded; GPUs are found again by UUID */
  unsigned original_mw; /* limit before pflex first changed it */
  unsigned set_mw;      /* the limit pflex last set (noted before setting it); 0: unknown */
  unsigned prev_set_mw; /* the one pflex set before that (0: none), still pflex's own */
  long long pid;        /* process that recorded it (information only) */
  long long time;       /* seconds since the epoch when recorded */
  char holder[64];      /* lock file of the process that keeps the GPU ("": none) */
  /* Non-empty: the record on disk is malformed (this says which field and
   * how). It is kept verbatim, never used to change or restore a limit, and
   * blocks changes to its GPU (to every GPU when its uuid is unreadable). */
  char problem[160];
};

/* How to open a store. */
struct pflex_restore_opts {
  const char *state_dir; /* NULL or "": PFLEX_RESTORE_DEFAULT_DIR */
  double lock_timeout_s; /* wait for another process's restore.lock; < 0: the default 30 s */
  bool hold;             /* this process keeps the GPUs it sets until it restores them */
  bool no_create;        /* a missing state directory is -ENOENT, not created */
};

void pflex_restore_opts_init(struct pflex_restore_opts *opts);

/* Opens the restore store, creating the directory (mode 0755, its parent then
 * fsync'd) unless no_create. Refuses (-EPERM) a directory that another user
 * owns or may write, or under such a directory; -ENOTDIR for a file. On
 * failure errbuf (may be NULL) receives a one-line reason. Free with
 * pflex_restore_free. */
int pflex_restore_open_opts(const struct pflex_restore_opts *opts,
                            struct pflex_restore **ret_restore, char *errbuf, size_t errlen);

/* pflex_restore_open_opts with the defaults and state_dir. */
int pflex_restore_open(const char *state_dir, struct pflex_restore **ret_restore);

/* A store that lives only in memory, for simulated GPUs that vanish with the
 * process anyway. Never use it with real GPUs. */
int pflex_restore_open_memory(struct pflex_restore **ret_restore);

/* Frees (and gives up this process's holder lock); accepts NULL. */
void pflex_restore_free(struct pflex_restore *restore);

/* Path of the restore file ("" for a memory store). */
const char *pflex_restore_path(const struct pflex_restore *restore);

/* Fault injection for tests: `fn` is called at each step below and a
 * negative errno it returns makes that step fail with it (0: go on). The
 * hook belongs to this store only. */
enum pflex_restore_step {
  PFLEX_RESTORE_STEP_LOCK = 0,  /* creating/opening restore.lock for writing */
  PFLEX_RESTORE_STEP_WRITE,     /* writing the temporary file */
  PFLEX_RESTORE_STEP_FSYNC,     /* fsync of the temporary file */
  PFLEX_RESTORE_STEP_RENAME,    /* rename over restore.json */
  PFLEX_RESTORE_STEP_DIR_FSYNC, /* fsync of the directory */
  PFLEX_RESTORE_STEP_SET_LIMIT, /* just before each limit change */
};
typedef int (*pflex_restore_fault_fn)(enum pflex_restore_step step, void *userdata);
void pflex_restore_set_fault(struct pflex_restore *restore, pflex_restore_fault_fn fn,
                             void *userdata);

/* One GPU of pflex_restore_apply_limits. */
struct pflex_limit_change {
  unsigned index;      /* GPU index (in) */
  unsigned mw;         /* requested limit, mW (in) */
  unsigned before_mw;  /* out: limit read under the lock just before the change */
  unsigned applied_mw; /* out: the limit set (mw, or the clamped value) */
  bool clamped;        /* out: mw was outside the GPU's range and PFLEX_APPLY_CLAMP moved it */
  bool left;           /* out: after a failure this GPU could not be put back; its record is
                          kept, so 'pflex cap restore' brings it back */
};
enum { PFLEX_APPLY_CLAMP = 1u << 0, PFLEX_APPLY_DRY_RUN = 1u << 1 };
/* Sets every listed GPU's limit, or none: under restore.lock, records every
 * original durably first, then sets each (and reads it back); on any failure
 * puts back those it changed and removes the records it created, so nothing is
 * left half-applied. SIGTERM/SIGINT/SIGHUP arriving meanwhile are held
 * (blocked, then the caller's mask restored) so the set completes or is
 * undone, never half. Returns 0 or the first error (-ERANGE: a limit outside
 * its GPU's range without PFLEX_APPLY_CLAMP, nothing changed; -EINVAL: an
 * index listed twice; -PFLEX_E_HELD, -PFLEX_E_PARSE (a malformed record of
 * that GPU), -PFLEX_E_LOCKED, a storage or a GPU error); *ret_failed (may be
 * NULL) receives the position in `changes` of the entry that failed, or n
 * when the failure was the record file's. With PFLEX_APPLY_DRY_RUN it checks
 * and fills before/applied/clamped, and changes nothing. */
int pflex_restore_apply_limits(struct pflex_restore *rs, struct pflex_gpu *gpu,
                               struct pflex_limit_change *changes, size_t n, unsigned flags,
                               size_t *ret_failed);

/* One GPU's limit through pflex_restore_apply_limits (no clamp). */
int pflex_restore_set_limit(struct pflex_restore *restore, struct pflex_gpu *gpu, unsigned index,
                            unsigned mw);

/* Makes sure a durable record of GPU `index` exists, recording its current
 * limit if there is none yet (an existing record keeps the older original). */
int pflex_restore_record(struct pflex_restore *restore, struct pflex_gpu *gpu, unsigned index);

/* All records (of every backend, malformed ones with `problem` set), read from
 * disk; *ret is freed by the caller. A reader that may not take restore.lock
 * (not root) reads without it: restore.json is only ever replaced whole. */
int pflex_restore_list(struct pflex_restore *restore, struct pflex_restore_record **ret_records,
                       size_t *ret_n);

/* Outcome of restoring one record. */
struct pflex_restore_result {
  struct pflex_restore_record record;
  int err;         /* 0: restored and record cleared; else why not */
  unsigned index;  /* index the GPU was found at (valid when found) */
  int found;       /* the GPU (by UUID) is present on this backend */
  unsigned was_mw; /* limit found before restoring (valid when found) */
  int changed;     /* err is -EBUSY: the limit was changed by someone else since pflex set it */
  int restored;    /* the limit is back at the original, even when err says the record could
                      not be cleared (then the record stays: a later restore finds it done) */
};

/* Flags of pflex_restore_apply. */
enum { PFLEX_RESTORE_FORCE = 1u << 0 };

/* Brings every recorded GPU of this backend back to its original limit,
 * finding it by UUID; with `only` (nonly > 0) just the GPUs at those current
 * indexes. A GPU whose limit is now neither its original nor one of the two
 * limits pflex last set was changed by someone else since: it is left as it
 * is (err -EBUSY, `changed` set, record kept) unless flags has
 * PFLEX_RESTORE_FORCE. A malformed record is reported (err -PFLEX_E_PARSE)
 * and kept. Clears the records of GPUs restored successfully and keeps the
 * others; when the file cannot be rewritten, each restored GPU's err is that
 * error (with `restored` set). Returns 0 when every selected record was
 * restored and cleared, otherwise the first error. Unlike most ret_
 * parameters, *ret_results (freed by the caller) is set also on error
 * whenever the records could be read, to say what happened to each; it stays
 * untouched only when reading them failed. */
int pflex_restore_apply(struct pflex_restore *restore, struct pflex_gpu *gpu, const unsigned *only,
                        size_t nonly, unsigned flags, struct pflex_restore_result **ret_results,
                        size_t *ret_n);

#endif
