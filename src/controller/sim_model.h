/* The simulated cluster's PFI model: fitted on the templates' sweeps (their
 * uncapped runs' telemetry) with the features pflexd reports on the sim
 * backend, so that the controller predicts each job's PFI from its own
 * telemetry as it would on a real cluster with a `pflex fit` model. */
#ifndef CTL_SIM_MODEL_H
#define CTL_SIM_MODEL_H

#include <stddef.h>

#include "pflex/runs.h"

/* The features, as `pflex fit --features` takes them. */
#define SIM_MODEL_FEATURES "dram_active,sm_active,pipe_tensor_active,mem_copy_util"

/* Fits a ridge model (lambda by leave-one-out) on set's sweep groups with
 * SIM_MODEL_FEATURES and writes it to path. err names what failed. */
int sim_model_fit(const struct pflex_runset *set, const char *path, char *err, size_t errlen);

#endif
