/* The pflex store: sweep groups, runs, their extra columns and raw telemetry
 * samples in one SQLite file (docs/store.md).
 *
 * The schema is versioned: opening a store applies, in order and each in its
 * own transaction, every migration it has not seen yet; a store written by a
 * newer pflex is refused with -PFLEX_E_SCHEMA. Every write is one transaction:
 * it happens completely or not at all. A group's configuration (GPU type and
 * count, model, arch, task, set, seq_len, batch, ep, compile, grad_ckpt) and
 * its throughput unit are kept once per group, so all runs of a group must
 * agree on them. An absent optional field (a clear bit in pflex_run.have, a
 * NULL string, an unknown arch or task) is stored as SQL NULL. */
#ifndef PFLEX_STORE_H
#define PFLEX_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "pflex/error.h"
#include "pflex/progress.h"
#include "pflex/runs.h"

struct pflex_store; /* opaque: one open SQLite connection */

/* Flags of pflex_store_open. */
enum pflex_store_flag {
  PFLEX_STORE_READONLY = 1u << 0, /* never write; an older schema is refused, not migrated */
  PFLEX_STORE_CREATE = 1u << 1,   /* create the file when missing (ignored with READONLY) */
};

/* What pflex_store_put_runs does with a group that is already stored. */
enum pflex_store_put_mode {
  PFLEX_STORE_REJECT_EXISTING = 0, /* fail with -EEXIST, store nothing */
  PFLEX_STORE_REPLACE_GROUP,       /* delete the stored group (runs, extras, samples) first */
  PFLEX_STORE_APPEND,              /* add the runs to it; a cap it already has fails with -EEXIST */
};

/* The schema version this program writes (the number of migrations it knows). */
int pflex_store_schema_latest(void);

/* Opens (and with PFLEX_STORE_CREATE creates) the store at path and migrates it
 * to the latest schema. Fails with -PFLEX_E_SCHEMA for a newer schema or a file
 * that is not a pflex store, -ENOENT for a missing file without CREATE, or a
 * negative errno for other failures; diag (may be NULL) says why. */
int pflex_store_open(const char *path, unsigned flags, struct pflex_store **ret_store,
                     struct pflex_diag *diag);

/* Closes the store. Accepts NULL. */
void pflex_store_close(struct pflex_store *store);

/* The schema version recorded in the open store. */
int pflex_store_schema_version(struct pflex_store *store, int *ret_version);

/* Has the store's long calls (pflex_store_put_runs: each group stored) tell p
 * how far they are; NULL: no progress (the default). *p is copied. */
void pflex_store_set_progress(struct pflex_store *store, const struct pflex_progress *p);

/* How many groups and runs a pflex_store_put_runs call wrote. */
struct pflex_store_put_result {
  size_t groups_new, groups_replaced, groups_appended;
  size_t runs;
};

/* Stores every run of set in one transaction, group by group in order of first
 * appearance, with set->unit as the groups' throughput unit and set->source as
 * their source. On any failure nothing is written: -EEXIST for a conflict with
 * a stored group (see mode), -PFLEX_E_DATA for runs that break a rule (a group
 * mixing configurations, a non-finite number, a unit differing from the stored
 * group's, an extra cell or column name that is not UTF-8), or a negative errno; diag (may be NULL) names the group and why.
 * ret_result may be NULL. */
int pflex_store_put_runs(struct pflex_store *store, const struct pflex_runset *set,
                         enum pflex_store_put_mode mode, struct pflex_store_put_result *ret_result,
                         struct pflex_diag *diag);

/* Reads the runs of the named groups (in the order given, duplicates ignored), or of
 * every group in order of storage when ngroups is 0, into an empty runset. Runs
 * keep their order of storage; extra columns appear in order of first appearance.
 * Fails with -ENOENT for an unknown group, -PFLEX_E_DATA when the groups have
 * different throughput units (one runset has one unit), and -PFLEX_E_SCHEMA for
 * a run whose stored extra columns are malformed (edited by hand); diag says which. */
int pflex_store_get_runs(struct pflex_store *store, const char *const *groups, size_t ngroups,
                         struct pflex_runset *ret_set, struct pflex_diag *diag);

/* One stored group, as listed by pflex_store_list_groups. */
struct pflex_store_group {
  char *name;
  char *gpu;
  int gpus;
  enum pflex_tput_unit unit;
  char *model; /* NULL when absent */
  enum pflex_arch arch;
  enum pflex_task task;
  char *set;         /* NULL when absent */
  char *source;      /* file the group was imported from, NULL if unknown */
  char *imported_at; /* UTC time of the (last) write, ISO 8601 */
  size_t runs;       /* number of runs */
  size_t samples;    /* number of telemetry samples of its runs */
};

/* Lists the stored groups in order of storage. Free with pflex_store_groups_free. */
int pflex_store_list_groups(struct pflex_store *store, struct pflex_store_group **ret_groups,
                            size_t *ret_n);
void pflex_store_groups_free(struct pflex_store_group *groups, size_t n);

/* The id of the stored run of group at cap_w (exact match): -ENOENT when none. */
int pflex_store_run_id(struct pflex_store *store, const char *group, double cap_w, int64_t *ret_id);

/* One raw telemetry sample of a run: metric of GPU gpu at time_s seconds. */
struct pflex_sample {
  double time_s;
  int gpu;
  const char *metric; /* e.g. "power_w", "sm_active" */
  double value;
};

/* Appends n samples to run run_id in one transaction (all or nothing). Fails with
 * -ENOENT for an unknown run and -EINVAL for a non-finite time or value, an empty
 * metric name or a negative GPU index. */
int pflex_store_add_samples(struct pflex_store *store, int64_t run_id,
                            const struct pflex_sample *samples, size_t n);

/* Samples read back from the store; metric strings are owned by the set. */
struct pflex_sample_set {
  struct pflex_sample *samples;
  size_t n;
  char **metrics; /* distinct metric names; samples[i].metric points to one */
  size_t nmetrics;
};

/* Makes set an empty sample set; pflex_sample_set_release frees it (NULL allowed). */
void pflex_sample_set_init(struct pflex_sample_set *set);
void pflex_sample_set_release(struct pflex_sample_set *set);

/* Reads the samples of run run_id (only of metric, unless NULL), ordered by metric,
 * GPU and time, into an empty sample set. An unknown run gives -ENOENT. */
int pflex_store_get_samples(struct pflex_store *store, int64_t run_id, const char *metric,
                            struct pflex_sample_set *ret_set);

#endif
