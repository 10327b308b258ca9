/* The telemetry series CSV on disk (src/io/series_csv.c, docs/telemetry.md). */
#ifndef PFLEX_SERIES_CSV_H
#define PFLEX_SERIES_CSV_H

#include <stdbool.h>

#include "pflex/error.h"
#include "pflex/series.h"

/* Reading the series CSV (src/io/series_csv.c, docs/telemetry.md). */
struct pflex_series_read_opts {
  const char *tput_column; /* throughput column, NULL = "tokens_per_s" */
  bool per_step_time;      /* the throughput column holds a time per step: use 1/value */
};

/* Reads a long-format telemetry series CSV: one row per sample per GPU
 * (time_s, gpu, metrics...) and throughput rows (gpu empty, throughput set).
 * All or nothing: on error *ret_s is untouched and diag names file, line and
 * column. opts may be NULL. */
int pflex_series_read_csv(const char *path, const struct pflex_series_read_opts *opts,
                          struct pflex_series *ret_s, struct pflex_diag *diag);

/* Reads throughput-only CSV (columns time_s and the throughput column) into s,
 * appending to its throughput samples; all or nothing. */
int pflex_series_read_tput_csv(const char *path, const struct pflex_series_read_opts *opts,
                               struct pflex_series *s, struct pflex_diag *diag);

#endif
