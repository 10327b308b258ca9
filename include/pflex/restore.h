/* Durable restore records: every power-limit change can be undone (docs/gpu.md).
 *
 * Before the first change to a GPU's limit, its original limit and identity
 * (backend, UUID, index, PCI bus id) are written to a restore file in the
 * state directory (default /var/lib/pflex, or env PFLEX_STATE_DIR): a
 * temporary file is written and fsync'd, renamed over restore.json, and the
 * directory is fsync'd. Only then is the limit changed. A record is kept until
 * its GPU has been brought back, so `pflex cap restore` works after anything,
 * kill -9 included. Concurrent pflex processes serialise on restore.lock.
 * A GPU whose record belongs to another pflex process that is still running
 * (a sweep) is refused with -PFLEX_E_HELD, both for changes and for restore
 * (unless forced): that process restores it when it ends.
 *
 * pflex_restore_set_limit() is the one way pflex changes a limit. */
#ifndef PFLEX_RESTORE_H
#define PFLEX_RESTORE_H

#include <stddef.h>

#include "pflex/gpu.h"

#define PFLEX_RESTORE_DEFAULT_DIR "/var/lib/pflex"
#define PFLEX_RESTORE_FILE "restore.json"

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
  long long pid;        /* process that recorded it */
  long long time;       /* seconds since the epoch when recorded */
};

/* Opens the restore store in state_dir (NULL: env PFLEX_STATE_DIR, else the
 * default), creating the directory (mode 0755) if needed. Free with
 * pflex_restore_free. */
int pflex_restore_open(const char *state_dir, struct pflex_restore **ret_restore);

/* A store that lives only in memory, for simulated GPUs that vanish with the
 * process anyway. Never use it with real GPUs. */
int pflex_restore_open_memory(struct pflex_restore **ret_restore);

/* Frees; accepts NULL. */
void pflex_restore_free(struct pflex_restore *restore);

/* Path of the restore file ("" for a memory store). */
const char *pflex_restore_path(const struct pflex_restore *restore);

/* Makes sure a durable record of GPU `index` exists, recording its current
 * limit if there is none yet (an existing record keeps the older original). */
int pflex_restore_record(struct pflex_restore *restore, struct pflex_gpu *gpu, unsigned index);

/* Records (pflex_restore_record) and, only if that succeeded, sets the limit,
 * holding restore.lock throughout so that no concurrent restore can clear the
 * record in between. Returns the record's error (the limit untouched) or the
 * backend's error. */
int pflex_restore_set_limit(struct pflex_restore *restore, struct pflex_gpu *gpu, unsigned index,
                            unsigned mw);

/* All records (of every backend), read from disk; *ret is freed by the caller. */
int pflex_restore_list(struct pflex_restore *restore, struct pflex_restore_record **ret_records,
                       size_t *ret_n);

/* Outcome of restoring one record. */
struct pflex_restore_result {
  struct pflex_restore_record record;
  int err;         /* 0: restored and record cleared; else why not (record kept) */
  unsigned index;  /* index the GPU was found at (valid when found) */
  int found;       /* the GPU (by UUID) is present on this backend */
  unsigned was_mw; /* limit found before restoring (valid when found) */
  int changed;     /* err is -EBUSY: the limit was changed by someone else since pflex set it */
};

/* Flags of pflex_restore_apply. */
enum { PFLEX_RESTORE_FORCE = 1u << 0 };

/* Brings every recorded GPU of this backend back to its original limit,
 * finding it by UUID; with `only` (nonly > 0) just the GPUs at those current
 * indexes. A GPU whose limit is now neither its original nor one of the two
 * limits pflex last set was changed by someone else since: it is left as it is (err
 * -EBUSY, `changed` set, record kept) unless flags has PFLEX_RESTORE_FORCE. Clears the records of GPUs restored successfully and keeps the
 * others. Returns 0 when every selected record was restored, otherwise the
 * first error. Unlike most ret_ parameters, *ret_results (freed by the caller)
 * is set also on error whenever the records could be read, to say what
 * happened to each; it stays untouched only when reading them failed. */
int pflex_restore_apply(struct pflex_restore *restore, struct pflex_gpu *gpu, const unsigned *only,
                        size_t nonly, unsigned flags, struct pflex_restore_result **ret_results,
                        size_t *ret_n);

#endif
