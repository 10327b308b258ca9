/* Options shared by `pflex pfi`, `stats`, `fit` and `ablation`: how a
 * group's PFI is computed (definition, exclusion rule, Monte Carlo settings)
 * and how the runs CSV is read (--unit, --tput-column), as option-table rows
 * (cli/options.h) that each command includes in its own table; and the
 * computation of one group's PFI with the reasons for what it left out. */
#ifndef PFLEX_CLI_PFI_ARGS_H
#define PFLEX_CLI_PFI_ARGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli/options.h"
#include "pflex/pfi.h"
#include "pflex/runs.h"
#include "pflex/runs_csv.h"

/* The shared options' values. */
struct cli_pfi_args {
  struct pflex_pfi_opts opts; /* opts.grid points into grid after cli_pfi_args_finish */
  struct cli_list grid;       /* --grid: each command has its own row (its meaning differs) */
  struct pflex_runs_read_opts read;
};

/* Option rows over struct cli_pfi_args, for CLI_INCLUDE in a command's table:
 * the PFI target (--definition, --exclude, --noise-k, --noise, --power-cv,
 * --tput-cv), the runs reader (--unit, --tput-column), the Monte Carlo CI
 * (--draws, --seed) and --set as the runs reader's filter (pfi and stats;
 * fit, predict and ablation filter their data sets with a --set of their own). */
extern const struct cli_option cli_pfi_target_options[];
extern const struct cli_option cli_pfi_read_options[];
/* --tput-column and --reference-cap over a struct pflex_runs_read_opts (in
 * cli_pfi_read_options; pflex study includes them on its own reader options). */
extern const struct cli_option cli_runs_source_options[];
extern const struct cli_option cli_pfi_ci_options[];
extern const struct cli_option cli_pfi_set_option[];

/* Sets the defaults of every shared option. */
void cli_pfi_args_init(struct cli_pfi_args *a);
/* After parsing: points opts.grid at the --grid values. */
void cli_pfi_args_finish(struct cli_pfi_args *a);
/* Frees the grid (or let cli_release do it, when the table holds the --grid row). */
void cli_pfi_args_release(struct cli_pfi_args *a);

/* A human note naming why run r of a group was excluded ("cap does not bind: ..."). */
void cli_pfi_reason_text(const struct pflex_pfi_run_result *r, const struct pflex_pfi_opts *o,
                         char *buf, size_t size);

/* A group's PFI, or why there is none. */
struct cli_pfi_value {
  int err;                           /* 0, or the error of pflex_pfi_compute */
  struct pflex_pfi_result res;       /* valid when err == 0 */
  struct pflex_pfi_run_result *runs; /* each run's role: res.runs, or a classification */
  size_t n;
  const char *why; /* when err != 0: why there is no value, for humans */
};

/* Computes group g's PFI under opts into *v (release with cli_pfi_value_release);
 * returns v->err. On -PFLEX_E_NOPOINTS v->runs still says why each run was left out. */
int cli_pfi_value_compute(const struct pflex_runset *set, const struct pflex_group *g,
                          const struct pflex_pfi_opts *opts, struct cli_pfi_value *v);
void cli_pfi_value_release(struct cli_pfi_value *v);

/* Sets pfi, ci_low, ci_high (null without a value), runs, excluded ([{cap_w, reason,
 * drop, drop_se}], grid exclusions left out) on obj with keys prefixed by prefix. */
int cli_pfi_value_json(json_t *obj, const char *prefix, const struct cli_pfi_value *v);

/* Prints note lines for v: why it has no value, a CI resting on fewer draws
 * than asked for, and (with_excluded) "GROUP: CAP W excluded: reason" per run
 * left out (grid ones left out). */
void cli_pfi_value_notes(FILE *out, const char *group, const struct cli_pfi_value *v,
                         const struct pflex_pfi_opts *opts, const char *what, bool with_excluded);

#endif
