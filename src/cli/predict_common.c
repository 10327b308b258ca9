/* Helpers shared by the prediction commands (predict_common.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/pfi_args.h"
#include "cli/predict_common.h"
#include "cli/util.h"

int cli_features_dataset(const struct pflex_runset *set, const char *set_filter, const char *spec,
                         const struct pflex_pfi_opts *pfi, bool need_target,
                         struct pflex_dataset *ret) {
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  struct pflex_featlist none, feats;
  pflex_featlist_init(&none);
  pflex_featlist_init(&feats);
  /* First the groups alone, for the uncapped runs `dcgm` looks at. */
  struct pflex_dataset groups;
  int err = pflex_dataset_build(set, set_filter, &none, pfi, need_target, &groups, &diag);
  if (!err) {
    err = pflex_featlist_parse(spec, set, groups.uncapped, groups.n, &feats, &diag);
    pflex_dataset_release(&groups);
  }
  if (!err) err = pflex_dataset_build(set, set_filter, &feats, pfi, need_target, ret, &diag);
  pflex_featlist_release(&feats);
  if (err) {
    char buf[1024];
    pflex_diag_format(&diag, buf, sizeof buf);
    cli_error("%s", diag.message[0] ? buf : pflex_strerror(err));
  }
  return err;
}

void cli_num(FILE *f, int w, double v) {
  if (isfinite(v))
    fprintf(f, "%*.3f", w, v);
  else
    fprintf(f, "%*s", w, "-");
}

void cli_scores(FILE *f, const struct pflex_scores *s) {
  fputs("R^2 ", f);
  cli_num(f, 0, s->r2);
  fputs("  RMSE ", f);
  cli_num(f, 0, s->rmse);
  fputs("  rho ", f);
  cli_num(f, 0, s->rho);
}

void cli_target_line(FILE *f, const struct pflex_pfi_opts *o) {
  fprintf(f, "target: PFI by the %s definition, ", pflex_pfi_definition_name(o->definition));
  if (o->exclude == PFLEX_PFI_EXCLUDE_PAPER)
    fprintf(f, "runs with T == T_max left out (the paper's rule)");
  else
    fprintf(f, "caps within %g standard errors of T_max left out (noise rule)", o->noise_k);
  if (o->grid) {
    fprintf(f, ", on the caps");
    for (size_t k = 0; k < o->ngrid; k++)
      fprintf(f, "%s%g", k ? "," : " ", o->grid[k]);
  }
  fprintf(f, "\n");
}
