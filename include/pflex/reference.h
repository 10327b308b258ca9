/* The reference (uncapped) run of a sweep group, and why it is that run.
 *
 * PFI and every curve compare a group's runs with its reference run
 * (P_max, T_max): its run at the highest cap. That is the uncapped run when
 * the cap is the GPU's default limit (include/pflex/gpu_models.h). When no
 * run of the group sits at the default limit (an A100 measured up to 300 W),
 * or the GPU type is one pflex does not know, the highest-cap run is still
 * the reference, and pflex says so; a runs reader can also be told which cap
 * is the reference (pflex_runs_read_opts.reference_cap_w, --reference-cap). */
#ifndef PFLEX_REFERENCE_H
#define PFLEX_REFERENCE_H

#include <stddef.h>

#include "pflex/error.h"
#include "pflex/runs.h"

/* Caps within this many watts are the same cap. */
#define PFLEX_REFERENCE_TOL_W 0.5

enum pflex_reference_kind {
  PFLEX_REFERENCE_DEFAULT = 0,   /* the highest cap is the GPU's default limit (or above it) */
  PFLEX_REFERENCE_BELOW_DEFAULT, /* no run at the default limit: the highest-cap run */
  PFLEX_REFERENCE_UNKNOWN_GPU,   /* a GPU type pflex does not know: the highest-cap run */
};

struct pflex_reference {
  enum pflex_reference_kind kind;
  double cap_w;     /* the reference run's per-GPU cap */
  double default_w; /* the GPU's default limit; NAN for an unknown type */
};

/* The reference run of group g of set: always its highest-cap run (g->uncapped),
 * and which kind of reference that is. */
void pflex_group_reference(const struct pflex_runset *set, const struct pflex_group *g,
                           struct pflex_reference *ret);

/* A one-line note for people on group's reference run, for every kind but
 * PFLEX_REFERENCE_DEFAULT ("no run at the A100's 400 W default limit: its
 * highest cap, 300 W, is the reference (uncapped) run"), in buf: 0, or
 * -ENOENT when there is nothing to say. */
int pflex_reference_note(const struct pflex_reference *ref, const char *group, const char *gpu,
                         char *buf, size_t size);

/* Checks that every group of set has a run at cap_w (within
 * PFLEX_REFERENCE_TOL_W) and none above it: 0, or -PFLEX_E_DATA with diag
 * naming the first group that has not. */
int pflex_runset_check_reference(const struct pflex_runset *set, double cap_w,
                                 struct pflex_diag *diag);

#endif
