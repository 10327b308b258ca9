/* The GPU types pflex knows: each one's settable power-limit range, default
 * limit and typical idle power, in one table (src/core/gpu_models.c; every
 * number and its public source in docs/gpus.md). Everything that needs a
 * GPU's limits asks here; a GPU type the table does not know takes its
 * limits from the data (pflex_gpu_limits_resolve), never from another GPU. */
#ifndef PFLEX_GPU_MODELS_H
#define PFLEX_GPU_MODELS_H

#include <stdbool.h>
#include <stddef.h>

/* Bits of pflex_gpu_model.estimated: the numbers that are estimates (no
 * datasheet or NVML reading found for them; docs/gpus.md says how each was
 * chosen). */
enum pflex_gpu_estimate {
  PFLEX_GPU_EST_LIMIT_MIN = 1u << 0,
  PFLEX_GPU_EST_DEFAULT = 1u << 1,
  PFLEX_GPU_EST_IDLE = 1u << 2,
};

struct pflex_gpu_model {
  const char *name;       /* the runs CSV spelling: "H200", "A100-PCIE", ... */
  const char *long_name;  /* "NVIDIA A100 PCIe 80GB" */
  double limit_min_w;     /* lowest settable power limit (NVML's minimum constraint) */
  double limit_max_w;     /* highest settable power limit */
  double default_limit_w; /* the default limit: a run at it is uncapped */
  double idle_w;          /* typical board power of an idle GPU */
  unsigned estimated;     /* enum pflex_gpu_estimate bits */
};

/* Number of GPU types in the table, and the i-th (NULL past the end). */
size_t pflex_gpu_model_count(void);
const struct pflex_gpu_model *pflex_gpu_model_get(size_t i);

/* The GPU type a name denotes, or NULL when pflex does not know it. Accepts
 * the table's names and NVML's product names in any case ("H100", "NVIDIA
 * H100 80GB HBM3", "A100-PCIE", "NVIDIA A100-PCIE-40GB", "Tesla V100-SXM2-32GB",
 * "NVIDIA H200 NVL"): the first word after NVIDIA/Tesla names the chip, a
 * "PCIe" or "NVL" word the board form (neither: SXM), a memory size word
 * ("40GB") a variant where one differs. */
const struct pflex_gpu_model *pflex_gpu_model_find(const char *name);

/* A GPU's power limits as pflex uses them. */
struct pflex_gpu_limits {
  double min_w;     /* lowest settable limit, W per GPU */
  double default_w; /* default (uncapped) limit */
  double max_w;     /* highest settable limit */
  double idle_w;    /* typical idle power */
  bool known;       /* from the table (true) or from the data (false) */
};

/* The median over the table of idle power over default limit: the idle
 * share pflex assumes for a GPU type it does not know (an estimate). */
double pflex_gpu_idle_share(void);

/* The limits of GPU type gpu: the table's when it knows the type; otherwise
 * from the data (the lowest and highest caps seen, data_min_w <= data_max_w,
 * or NVML's range): min_w = data_min_w, default_w = max_w = data_max_w,
 * idle_w = pflex_gpu_idle_share() x data_max_w. -EINVAL when the type is
 * unknown and the data range is not finite and positive. */
int pflex_gpu_limits_resolve(const char *gpu, double data_min_w, double data_max_w,
                             struct pflex_gpu_limits *ret);

/* The per-GPU cap that stands where H200 cap ref_w (in [200, 700] W, the
 * paper's range) stands in a GPU's own range [lo_w, hi_w]:
 * lo_w + (ref_w - 200) (hi_w - lo_w) / 500; exactly ref_w for 200-700 W. */
double pflex_gpu_cap_relative(double ref_w, double lo_w, double hi_w);

#endif
