/* Internal to src/gpu: the backends' ops tables (for the registry in gpu.c)
 * and the unrecorded limit setter (for restore.c). Not in include/pflex, so
 * no program can change a limit without its restore record. */
#ifndef PFLEX_GPU_BACKENDS_H
#define PFLEX_GPU_BACKENDS_H

#include "pflex/gpu.h"

extern const struct pflex_gpu_ops pflex__gpu_nvml_ops;
extern const struct pflex_gpu_ops pflex__gpu_sim_ops;

/* Sets the limit WITHOUT a restore record. Only src/gpu/restore.c (and the
 * backends' tests) may call this; everyone else uses pflex_restore_set_limit. */
int pflex__gpu_set_limit_unrecorded(struct pflex_gpu *gpu, unsigned index, unsigned mw);

#endif
