/* The simulated cluster's PFI model (sim_model.h). */
#include "controller/sim_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pflex/error.h"
#include "pflex/features.h"
#include "pflex/model_json.h"
#include "pflex/predict.h"
#include "pflex/runs_provenance.h"

int sim_model_fit(const struct pflex_runset *set, const char *path, char *err, size_t errlen) {
  struct pflex_featlist feats;
  struct pflex_pfi_opts pfi;
  struct pflex_dataset d;
  struct pflex_model m;
  struct pflex_diag diag;
  pflex_featlist_init(&feats);
  pflex_pfi_opts_init(&pfi);
  pfi.draws = 0;
  pflex_dataset_init(&d);
  pflex_model_init(&m);
  pflex_diag_clear(&diag);
  int rc = pflex_featlist_parse(SIM_MODEL_FEATURES, set, NULL, 0, &feats, &diag);
  if (rc == 0) rc = pflex_dataset_build(set, NULL, &feats, &pfi, true, &d, &diag);
  struct pflex_fit_opts fo = {.kind = PFLEX_MODEL_RIDGE, .lambda = -1};
  if (rc == 0) rc = pflex_model_fit(&d, &fo, PFLEX_LOCO_ARCH_TASK, &m);
  if (rc == 0) {
    m.source = strdup("the sim's templates");
    m.version = strdup(PFLEX_VERSION);
    m.provenance = pflex_runs_provenance(set, NULL, 0);
    rc = !m.source || !m.version ? -ENOMEM : pflex_model_set_target(&m, &pfi);
  }
  if (rc == 0) rc = pflex_model_write_json(&m, path);
  if (rc < 0) {
    char why[512] = "";
    if (diag.message[0]) pflex_diag_format(&diag, why, sizeof why);
    snprintf(err, errlen, "cannot fit the PFI model on the templates: %s",
             why[0] ? why : pflex_strerror(rc));
  }
  pflex_model_release(&m);
  pflex_dataset_release(&d);
  pflex_featlist_release(&feats);
  return rc;
}
