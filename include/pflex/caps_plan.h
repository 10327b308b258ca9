/* From a plan to the GPUs: a mapping file says on which GPUs of which node
 * each job runs; with an allocation it becomes a caps file, one power limit
 * per (node, GPU), which `pflex cap set --from` applies all or nothing on
 * each node (docs/allocation.md, "From a plan to the GPUs").
 *
 * Mapping JSON:  {"jobs": {"JOB": {"NODE": [GPU index, ...], ...}, ...}}
 * Caps JSON:     {"format": "pflex-caps/1", "strategy": "optimal",
 *                 "target_w": W, "provenance": "simulated",
 *                 "caps": [{"node": "n1", "gpu": 0,
 *                 "cap_w": 412.5, "job": "JOB"}, ...]} */
#ifndef PFLEX_CAPS_PLAN_H
#define PFLEX_CAPS_PLAN_H

#include <stddef.h>

#include "pflex/error.h"
#include "pflex/provenance.h"

#define PFLEX_CAPS_FORMAT "pflex-caps/1"
#define PFLEX_MAX_GPU_INDEX 4095

/* One GPU of a job in a mapping, or one GPU's cap in a caps file. */
struct pflex_gpu_cap {
  char *node;
  char *job;
  unsigned gpu;
  double cap_w; /* NAN in a mapping */
};

/* A mapping (caps NAN) or a caps plan: n entries, ordered by job as given. */
struct pflex_caps_plan {
  struct pflex_gpu_cap *caps;
  size_t n;
  char *strategy; /* caps file only; may be NULL */
  double target_w;
  enum pflex_provenance provenance; /* of the allocation's input (caps file only) */
};

void pflex_caps_plan_init(struct pflex_caps_plan *plan);
void pflex_caps_plan_release(struct pflex_caps_plan *plan);

/* Reads a mapping file. A GPU named twice on one node (by one job or two), a
 * negative or too large index, an empty job or node, or an unknown key is an
 * error naming the job and node. All or nothing. */
int pflex_mapping_read_json(const char *path, struct pflex_caps_plan *ret,
                            struct pflex_diag *diag);

/* The jobs of an allocation, for pflex_caps_plan_build. */
struct pflex_caps_job {
  const char *name;
  int gpus;     /* GPUs the job runs on: the mapping must list exactly these many */
  double cap_w; /* the per-GPU cap the allocation gives it */
};

/* Gives each mapped GPU its job's cap. Every job of the allocation must be in
 * the mapping with exactly `gpus` GPUs, and every mapped job must be in the
 * allocation (a typo is not silently dropped): -PFLEX_E_DATA naming the job
 * otherwise (diag's file is map_path). */
int pflex_caps_plan_build(const struct pflex_caps_plan *mapping, const char *map_path,
                          const struct pflex_caps_job *jobs, size_t n, const char *strategy,
                          double target_w, enum pflex_provenance provenance,
                          struct pflex_caps_plan *ret, struct pflex_diag *diag);

/* Replaces path atomically with the caps file of plan. */
int pflex_caps_plan_write_json(const char *path, const struct pflex_caps_plan *plan);

/* Reads a caps file; every cap a positive finite number of watts; one GPU of
 * a node once. All or nothing. */
int pflex_caps_plan_read_json(const char *path, struct pflex_caps_plan *ret,
                              struct pflex_diag *diag);

#endif
