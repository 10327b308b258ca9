/* The backends' ops tables, for the registry in gpu.c only. */
#ifndef PFLEX_GPU_BACKENDS_H
#define PFLEX_GPU_BACKENDS_H

#include "pflex/gpu.h"

extern const struct pflex_gpu_ops pflex__gpu_nvml_ops;
extern const struct pflex_gpu_ops pflex__gpu_sim_ops;

#endif
