/* Helpers shared by the commands: error messages and loading inputs. */
#ifndef PFLEX_CLI_UTIL_H
#define PFLEX_CLI_UTIL_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "cli/options.h"
#include "pflex/error.h"
#include "pflex/provenance.h"
#include "pflex/runs.h"
#include "pflex/runs_csv.h"

/* Prints "error: " + message to stderr (the one place errors are printed). */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "error: <what>: <diag>" for a failed read. */
void cli_error_diag(const char *what, const struct pflex_diag *diag, int err);

/* Writes an interval as "0.004-0.005", or "-0.006 to -0.005" when a bound is
 * negative, where a dash between the numbers would read as a minus. */
void cli_fmt_interval(char *buf, size_t size, double lo, double hi);

/* Parses a throughput unit name (tokens, samples, steps, step-time); -EINVAL if unknown. */
int cli_parse_unit(const char *s, enum pflex_tput_unit *ret);

/* The name of unit value i (tokens, samples, steps, step-time: the unit
 * table's), NULL past the last: the choices of a --unit option (CLI_ENUM_FN). */
const char *cli_unit_name(int i);

/* The same for the library's other named values: model kinds (ols, ridge,
 * prior), LOCO schemes (arch-task, pooled-dense), allocation strategies. */
const char *cli_model_kind_name(int i);
const char *cli_loco_name(int i);
const char *cli_strategy_name(int i);
const char *cli_objective_name(int i); /* tokens, progress (include/pflex/objective.h) */

/* For commands without an option table yet (options.h does this by itself):
 * the value of option opt as a finite decimal number in [lo, hi] (hi may be
 * INFINITY); prints the error and returns -EINVAL otherwise. */
int cli_parse_double(const char *opt, const char *arg, double lo, double hi, double *ret);

/* The value of option opt as a whole decimal number in [lo, hi] (no sign);
 * prints the error and returns -EINVAL otherwise. */
int cli_parse_count(const char *opt, const char *arg, unsigned long long lo, unsigned long long hi,
                    unsigned long long *ret);

/* The value of a --format option (CLI_ENUM with cli_format_choices). */
enum cli_format { CLI_FORMAT_NONE = -1, CLI_FORMAT_CSV, CLI_FORMAT_JSON };
extern const struct cli_choice cli_format_choices[];

/* Prints v to stdout as JSON indented by 2 (plus jansson's flags, e.g.
 * JSON_REAL_PRECISION) and a newline, and drops the caller's reference to v;
 * a NULL v means building it ran out of memory. Prints any error itself: 0,
 * -ENOMEM or -EIO. */
int cli_print_json(json_t *v, size_t flags);

/* True when s ends with suffix. */
bool cli_ends_with(const char *s, const char *suffix);

/* The store file when --db is not given: $PFLEX_DB if set and not empty, else ./pflex.db. */
const char *cli_default_db(void);

/* True when path names a JSON file: it ends in .json or its first character
 * (after blanks) opens a JSON object or array. */
bool cli_looks_like_json(const char *path);

/* Loads a runs CSV, or a runs JSON file (cli_looks_like_json; the format
 * pflex export --format json writes), and prints any error; prints the
 * reconstructed-data notice when the runs carry set values of the reference
 * reconstruction, and (unless reading for the store) notes on groups whose
 * reference run is not at their GPU's default limit (cli/reference_notes.h).
 * 0 or -errno. */
int cli_load_runs(const char *path, const struct pflex_runs_read_opts *opts,
                  struct pflex_runset *ret_set);

/* Provenance in outputs (docs/formats.md, "Provenance"): the line of a human
 * table ("provenance: reconstructed (...)"), and the "provenance" field of a
 * JSON object (0 or -ENOMEM). */
void cli_print_provenance(FILE *f, enum pflex_provenance p);
int cli_json_provenance(json_t *o, enum pflex_provenance p);

/* Parses a comma-separated list of decimal numbers with optional a:b:step
 * ranges (cli_decimal_list). */
int cli_parse_list(const char *s, double **ret_values, size_t *ret_n);

/* Path of the built-in reference runs set: $PFLEX_DATA_DIR/reference/runs.csv
 * when that variable is set, else the installed copy, else this source tree's
 * data/reference/runs.csv (a build run from anywhere), else that relative path. */
const char *cli_reference_runs(void);

/* --threads N: at most CLI_THREADS_MAX; CLI_THREADS_UNSET before parsing
 * marks it not given. */
#define CLI_THREADS_MAX 1024u
#define CLI_THREADS_UNSET (CLI_THREADS_MAX + 1u)
#define CLI_THREADS_HELP                                                                           \
  "threads to compute on (default: one per CPU online, at most 8; 0: one per CPU online); the "    \
  "results are the same bits for any number"

/* The threads to use for --threads as given: not given, one per CPU online
 * but at most 8 (as GNU sort's --parallel: each thread has its own scratch);
 * 0, one per CPU online (at most CLI_THREADS_MAX); else as given. */
unsigned cli_threads(unsigned given);

#endif
