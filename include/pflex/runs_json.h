/* Runsets as JSON (docs/store.md, "runs JSON"): the same runs as the runs CSV,
 * for programs that prefer JSON. One object with "format": "pflex-runs",
 * "version": 1, "unit" (the throughput unit key), "columns" (the extra column
 * names in order) and "runs" (one object per run; optional fields are left out
 * when absent; extra columns are strings under "extra"). Numbers are written
 * with 17 significant digits, so a write and a read give back the same doubles. */
#ifndef PFLEX_RUNS_JSON_H
#define PFLEX_RUNS_JSON_H

#include "pflex/error.h"
#include "pflex/runs.h"

/* The stable text key of a throughput unit, as the runs JSON and the store write
 * it: "tokens_per_s", "samples_per_s", "steps_per_s" or "per_step_time" (the
 * inverse of a time per step). Never NULL. */
const char *pflex_tput_unit_key(enum pflex_tput_unit unit);

/* Parses a key of pflex_tput_unit_key: 0, or -EINVAL when unknown. */
int pflex_tput_unit_from_key(const char *key, enum pflex_tput_unit *ret_unit);

/* Formats set as a JSON document (indented, ending in a newline) in
 * *ret_json, which the caller frees with free(). */
int pflex_runs_to_json(const struct pflex_runset *set, char **ret_json);

/* Writes set as JSON to path atomically (temporary file, fsync, rename). */
int pflex_runs_write_json(const struct pflex_runset *set, const char *path);

/* Parses a runs JSON document (name labels diagnostics, may be NULL) into an empty
 * runset. All or nothing: on error *ret_set is untouched and diag says where:
 * -PFLEX_E_PARSE for malformed JSON or a wrong type, -PFLEX_E_DATA for a value
 * that breaks a rule (a missing required field, a non-positive number). */
int pflex_runs_from_json(const char *text, const char *name, struct pflex_runset *ret_set,
                         struct pflex_diag *diag);

/* Reads a runs JSON file into an empty runset (see pflex_runs_from_json). */
int pflex_runs_read_json(const char *path, struct pflex_runset *ret_set, struct pflex_diag *diag);

#endif
