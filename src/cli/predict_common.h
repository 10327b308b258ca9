/* Helpers shared by `pflex fit`, `pflex predict` and `pflex ablation`. */
#ifndef PFLEX_CLI_PREDICT_COMMON_H
#define PFLEX_CLI_PREDICT_COMMON_H

#include <stdbool.h>
#include <stdio.h>

#include "pflex/features.h"
#include "pflex/predict.h"
#include "pflex/runs.h"

/* Parses a feature list (expanding `dcgm` over the uncapped runs of the
 * groups that pass set_filter) and builds the per-group data set. Prints the
 * error (naming group and feature) and returns it on failure. */
int pc_dataset(const struct pflex_runset *set, const char *set_filter, const char *spec,
               const struct pflex_pfi_opts *pfi, bool need_target, struct pflex_dataset *ret);

/* The usage lines of the PFI options the prediction commands accept. */
#define PC_PFI_USAGE                                                                               \
  "  --definition D    target PFI: ratio (Eq. 1 and 3, default), area, or elasticity\n"            \
  "  --exclude R       runs left out of the target PFI: noise (default; as 'pflex pfi') or "       \
  "paper\n"                                                                                        \
  "                    (only T_i == T_max, the paper's rule)\n"                                    \
  "  --noise-k K       threshold of the noise rule in standard errors (default 2)\n"               \
  "  --power-cv X      relative noise of power when power_sd is absent (default 0.004)\n"          \
  "  --tput-cv X       relative noise of throughput when tokens_sd is absent (default 0.005)\n"    \
  "  --grid LIST       compute the target PFI on these caps only (e.g. 200,500,600,700)\n"         \
  "  --unit UNIT       throughput column: tokens (default), samples, steps, step-time\n"

/* Handles one of the shared PFI options for the prediction commands (no CI
 * options): 0 handled, 1 not one of them, -EINVAL reported bad value. */
struct cli_pfi_args;
/* Prints "target: PFI by DEFINITION, excluding ..." for a model's or command's PFI options. */
void pc_target_line(FILE *f, const struct pflex_pfi_opts *o);
int pc_pfi_option(struct cli_pfi_args *a, int c, const char *arg);

/* Prints v with 3 decimals in width w, or "-" when it is not finite. */
void pc_num(FILE *f, int w, double v);

/* Prints "R^2 X  RMSE Y  rho Z" as pc_num does (no newline). */
void pc_scores(FILE *f, const struct pflex_scores *s);

#endif
