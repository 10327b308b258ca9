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
int cli_features_dataset(const struct pflex_runset *set, const char *set_filter, const char *spec,
                         const struct pflex_pfi_opts *pfi, bool need_target,
                         struct pflex_dataset *ret);

/* Prints "target: PFI by DEFINITION, excluding ..." for a model's or command's PFI options. */
void cli_target_line(FILE *f, const struct pflex_pfi_opts *o);

/* Prints v with 3 decimals in width w, or "-" when it is not finite. */
void cli_num(FILE *f, int w, double v);

/* Prints "R^2 X  RMSE Y  rho Z" as cli_num does (no newline). */
void cli_scores(FILE *f, const struct pflex_scores *s);

#endif
