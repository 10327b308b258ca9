/* Options shared by `pflex pfi` and `pflex stats`: how a group's PFI is
 * computed (definition, exclusion rule, grid, Monte Carlo settings) and how
 * the runs CSV is read (--unit). Each command lists PFI_LONG_OPTIONS in its
 * getopt_long table and hands unknown codes to cli_pfi_option(). */
#ifndef PFLEX_CLI_PFI_ARGS_H
#define PFLEX_CLI_PFI_ARGS_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "pflex/pfi.h"
#include "pflex/runs.h"
#include "pflex/runs_csv.h"

enum {
  OPT_GRID = 1000,
  OPT_DEFINITION,
  OPT_DRAWS,
  OPT_SEED,
  OPT_POWER_CV,
  OPT_TPUT_CV,
  OPT_EXCLUDE,
  OPT_NOISE_K,
  OPT_UNIT,
  OPT_TPUT_COLUMN,
  OPT_NOISE,
  OPT_SET,
};

/* clang-format off */
#define PFI_LONG_OPTIONS                                   \
  {"grid", required_argument, NULL, OPT_GRID},             \
  {"definition", required_argument, NULL, OPT_DEFINITION}, \
  {"draws", required_argument, NULL, OPT_DRAWS},           \
  {"seed", required_argument, NULL, OPT_SEED},             \
  {"power-cv", required_argument, NULL, OPT_POWER_CV},     \
  {"tput-cv", required_argument, NULL, OPT_TPUT_CV},       \
  {"exclude", required_argument, NULL, OPT_EXCLUDE},       \
  {"noise-k", required_argument, NULL, OPT_NOISE_K},       \
  {"unit", required_argument, NULL, OPT_UNIT},             \
  {"tput-column", required_argument, NULL, OPT_TPUT_COLUMN}, \
  {"noise", required_argument, NULL, OPT_NOISE}

/* --set as a filter of the runs reader, for pfi and stats; fit, predict and
 * ablation filter their data sets with a --set of their own. */
#define PFI_SET_OPTION {"set", required_argument, NULL, OPT_SET}
/* clang-format on */

/* The usage lines of the shared options, one per option. */
#define PFI_OPTIONS_USAGE                                                                          \
  "  --definition D   ratio (Eq. 1 and 3, default), area, or elasticity (paper Appendix A)\n"      \
  "  --exclude R      noise (default): drop caps whose throughput drop is within k standard\n"     \
  "                   errors of T_i/T_max; paper: drop only runs with T_i == T_max\n"              \
  "  --noise-k K      threshold of the noise rule in standard errors (default 2)\n"                \
  "  --draws N        Monte Carlo draws for the 95% CI (default 10000; 0: no CI)\n"                \
  "  --seed S         random seed of the Monte Carlo draws (default 1)\n"                          \
  "  --noise N        run (default): each run's power_sd/tokens_sd when given (its within-run\n"   \
  "                   error), else the CVs; repeat: the CVs for every run (run-to-run noise)\n"    \
  "  --power-cv X     relative noise of power when power_sd is absent (default 0.004, the\n"      \
  "                   paper's repeat CV)\n"                                                       \
  "  --tput-cv X      relative noise of throughput when tokens_sd is absent (default 0.005)\n"     \
  "  --set NAME       only runs whose set column is NAME (e.g. headline)\n"                       \
  "  --unit U         throughput column: tokens (default), samples, steps, step-time\n"            \
  "  --tput-column C  read the throughput from column C (in the unit --unit names)\n"

struct cli_pfi_args {
  struct pflex_pfi_opts opts; /* opts.grid points into grid */
  double *grid;
  size_t ngrid;
  struct pflex_runs_read_opts read;
};

/* Sets the defaults of every shared option; cli_pfi_args_release frees the grid. */
void cli_pfi_args_init(struct cli_pfi_args *a);
void cli_pfi_args_release(struct cli_pfi_args *a);

/* Applies option code c with argument arg: 0 done, 1 not one of the shared
 * options, -EINVAL bad value (already reported on stderr). */
int cli_pfi_option(struct cli_pfi_args *a, int c, const char *arg);

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
