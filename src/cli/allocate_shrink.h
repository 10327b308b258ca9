/* `pflex allocate --shrink Z`: optimal on each job's curve shrunk toward its
 * power in the equal cut (include/pflex/shrink.h, docs/allocation.md). */
#ifndef PFLEX_CLI_ALLOCATE_SHRINK_H
#define PFLEX_CLI_ALLOCATE_SHRINK_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "pflex/alloc.h"

/* What the shrinkage did, for the output. */
struct allocate_shrink {
  double z, pfi_sd;           /* the band: z SDs of a PFI error of SD pfi_sd */
  double *anchor, *gain, *loss; /* per job: its equal-cut power, its factors */
  size_t n, moved;            /* jobs; how many left their anchor */
  bool kept_anchors;          /* no move beat the anchors on the bound: the equal cut */
};

/* Allocates jobs (whose weights are set) at target with optimal on shrunk
 * curves; results and summary are on the jobs' own curves, as pflex_alloc_run
 * gives them. On success *sh holds the per-job numbers (release with
 * allocate_shrink_release). Errors as pflex_alloc_run's; a job without a
 * finite PFI is -EINVAL with *ret_bad its index. */
int allocate_shrunk(const struct pflex_alloc_job *jobs, size_t n, double target, double z,
                    double pfi_sd, const struct pflex_alloc_opts *opts,
                    struct pflex_alloc_result *r, struct pflex_alloc_summary *s,
                    struct allocate_shrink *sh, size_t *ret_bad);
void allocate_shrink_release(struct allocate_shrink *sh);

/* The root's "shrink" object, and a job's anchor_w, shrink_gain, shrink_loss. */
json_t *allocate_shrink_json(const struct allocate_shrink *sh);
void allocate_shrink_job_json(const struct allocate_shrink *sh, size_t i, json_t *o);
/* The text output's line. */
void allocate_shrink_print(const struct allocate_shrink *sh);

#endif
