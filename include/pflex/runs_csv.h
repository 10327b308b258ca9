/* The runs CSV on disk (docs/formats.md): reading with validation, and
 * writing in the shortest round-trip number form (src/io/runs_csv.c). */
#ifndef PFLEX_RUNS_CSV_H
#define PFLEX_RUNS_CSV_H

#include <stdbool.h>
#include <stdio.h>

#include "pflex/error.h"
#include "pflex/runs.h"

/* Reads and validates a runs CSV (docs/formats.md). All or nothing: on error
 * *set is left empty and diag names file, line and column. `unit` says what the
 * throughput column holds when it is not tokens_per_s (see pflex_tput_unit). */
struct pflex_runs_read_opts {
  enum pflex_tput_unit unit; /* which throughput column to expect when tokens_per_s is absent */
  const char *tput_column;   /* explicit throughput column name, or NULL for the default */
  bool require_uncapped;     /* refuse a group whose highest cap is below its GPU's default limit
                                (the store's import rule); otherwise that run is the group's
                                reference run (pflex/reference.h) */
  bool partial_groups;       /* allow groups without their uncapped run (runs added to stored
                                groups): lifts require_uncapped */
  const char *set_filter;    /* keep only runs whose `set` column equals this (NULL: all runs) */
  double reference_cap_w;    /* > 0: leave out runs above this cap; every group's run at it is
                                its reference (uncapped) run (pflex_runset_check_reference) */
};
int pflex_runs_read_csv(const char *path, const struct pflex_runs_read_opts *opts,
                        struct pflex_runset *ret_set, struct pflex_diag *diag);

/* Writes a runset as CSV, atomically (temporary file, fsync, rename). */
int pflex_runs_write_csv(const struct pflex_runset *set, const char *path);

/* Writes a runset as CSV to an open stream (e.g. stdout); -EIO on a write error. */
int pflex_runs_write_csv_stream(const struct pflex_runset *set, FILE *f);

#endif
