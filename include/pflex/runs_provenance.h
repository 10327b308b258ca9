/* The provenance of runs (docs/formats.md, "Provenance"): each run declares
 * its own in the `provenance` column of a runs CSV (`extra.provenance` in a
 * runs JSON, the run's extras in the store), which every reader keeps and
 * every writer writes back. A run without it, or with a value that is not a
 * provenance name, is unknown. */
#ifndef PFLEX_RUNS_PROVENANCE_H
#define PFLEX_RUNS_PROVENANCE_H

#include <stddef.h>

#include "pflex/provenance.h"
#include "pflex/runs.h"

/* The column that declares a run's provenance. */
#define PFLEX_PROVENANCE_COLUMN "provenance"

/* The provenance of run i of set. */
enum pflex_provenance pflex_run_provenance(const struct pflex_runset *set, size_t i);

/* The provenance of the n runs idx[0..n) of set (every run when idx is
 * NULL): the weakest of theirs (pflex_provenance_combine); unknown for none. */
enum pflex_provenance pflex_runs_provenance(const struct pflex_runset *set, const size_t *idx,
                                            size_t n);

/* Declares provenance p on every run of set (the column added if needed). */
int pflex_runs_set_provenance(struct pflex_runset *set, enum pflex_provenance p);

#endif
