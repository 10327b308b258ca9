/* `pflex allocate --shrink Z` (allocate_shrink.h): never worse than an equal
 * cut on the curves' pessimistic bound (issue 12 item 4, docs/allocation.md). */
#include "cli/allocate_shrink.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pflex/shrink.h"

/* The tolerance under which a move does not count as beating the anchors:
 * the study's "worse than equal" tolerance (PFLEX_STUDY_EQUAL_TOL). */
#define SHRINK_MIN_GAIN 1e-5

void allocate_shrink_release(struct allocate_shrink *sh) {
  free(sh->anchor);
  free(sh->gain);
  free(sh->loss);
  memset(sh, 0, sizeof *sh);
}

/* Every job's shrunk curve around its anchor, into jp (copies of jobs). */
static int shrink_curves(const struct pflex_alloc_job *jobs, size_t n, struct allocate_shrink *sh,
                         struct pflex_shrink *shr, struct pflex_alloc_job *jp, size_t *ret_bad) {
  for (size_t i = 0; i < n; i++) {
    jp[i] = jobs[i];
    if (!jobs[i].curve || !isfinite(jobs[i].pfi)) {
      *ret_bad = i;
      return -EINVAL;
    }
    int err = pflex_shrink_factors(jobs[i].pfi, sh->pfi_sd, sh->z, &sh->gain[i], &sh->loss[i]);
    if (!err) err = pflex_shrink_init(&shr[i], jobs[i].curve, sh->anchor[i], sh->gain[i], sh->loss[i]);
    if (err) return err;
    jp[i].curve = shr[i].curve;
  }
  return 0;
}

/* The results at the powers pw on the jobs' own curves (caps from their own
 * points, throughput from their own curves); floors and gap bound as found. */
static void on_own_curves(const struct pflex_alloc_job *jobs, size_t n, const double *pw,
                          struct pflex_alloc_result *r, struct pflex_alloc_summary *s) {
  s->total_w = s->total_tput = s->weighted_tput = 0;
  for (size_t i = 0; i < n; i++) {
    const struct pflex_alloc_job *j = &jobs[i];
    double cmin = j->cap_min_w > 0 ? j->cap_min_w : PFLEX_ALLOC_CAP_MIN_W;
    double cmax = j->cap_max_w > 0 ? j->cap_max_w : PFLEX_ALLOC_CAP_MAX_W;
    r[i].power_w = pw[i];
    r[i].cap_w = pflex_curve_cap_for_power(j->curve, pw[i], j->gpus, cmin, cmax);
    r[i].tput = pflex_curve_eval(j->curve, pw[i]);
    s->total_w += pw[i];
    s->total_tput += r[i].tput;
    s->weighted_tput += j->weight * r[i].tput;
  }
}

static int shrink_alloc(const struct pflex_alloc_job *jobs, size_t n, double target,
                        const struct pflex_alloc_opts *opts, struct pflex_alloc_result *r,
                        struct pflex_alloc_summary *s, struct allocate_shrink *sh,
                        size_t *ret_bad) {
  struct pflex_shrink *shr = calloc(n, sizeof *shr);
  struct pflex_alloc_job *jp = calloc(n, sizeof *jp);
  double *pw = calloc(n, sizeof *pw);
  int err = shr && jp && pw ? 0 : -ENOMEM;
  /* The anchors: the equal cut on the jobs' own curves. */
  if (!err) err = pflex_alloc_run(jobs, n, PFLEX_ALLOC_EQUAL, target, opts, r, s);
  for (size_t i = 0; !err && i < n; i++)
    sh->anchor[i] = r[i].power_w;
  if (!err) err = shrink_curves(jobs, n, sh, shr, jp, ret_bad);
  if (!err) err = pflex_alloc_run(jp, n, PFLEX_ALLOC_OPTIMAL, target, opts, r, s);
  for (size_t i = 0; !err && i < n; i++)
    pw[i] = r[i].power_w;
  if (!err) {
    sh->kept_anchors = !pflex_shrink_worth(jp, pw, sh->anchor, n, SHRINK_MIN_GAIN);
    for (size_t i = 0; i < n; i++) {
      if (sh->kept_anchors) pw[i] = sh->anchor[i];
      sh->moved += fabs(pw[i] - sh->anchor[i]) > 1e-6 * pflex_curve_p_max(jobs[i].curve);
    }
    on_own_curves(jobs, n, pw, r, s);
  }
  for (size_t i = 0; shr && i < n; i++)
    pflex_shrink_release(&shr[i]);
  free(shr);
  free(jp);
  free(pw);
  return err;
}

int allocate_shrunk(const struct pflex_alloc_job *jobs, size_t n, double target, double z,
                    double pfi_sd, const struct pflex_alloc_opts *opts,
                    struct pflex_alloc_result *r, struct pflex_alloc_summary *s,
                    struct allocate_shrink *sh, size_t *ret_bad) {
  memset(sh, 0, sizeof *sh);
  sh->z = z, sh->pfi_sd = pfi_sd, sh->n = n;
  sh->anchor = calloc(n ? n : 1, sizeof *sh->anchor);
  sh->gain = calloc(n ? n : 1, sizeof *sh->gain);
  sh->loss = calloc(n ? n : 1, sizeof *sh->loss);
  int err = sh->anchor && sh->gain && sh->loss ? 0 : -ENOMEM;
  if (!err) err = shrink_alloc(jobs, n, target, opts, r, s, sh, ret_bad);
  if (err) allocate_shrink_release(sh);
  return err;
}

json_t *allocate_shrink_json(const struct allocate_shrink *sh) {
  json_t *o = json_object();
  json_object_set_new(o, "z", json_real(sh->z));
  json_object_set_new(o, "pfi_sd", json_real(sh->pfi_sd));
  json_object_set_new(o, "anchor", json_string("equal"));
  json_object_set_new(o, "kept_anchors", json_boolean(sh->kept_anchors));
  json_object_set_new(o, "jobs_moved", json_integer((json_int_t)sh->moved));
  return o;
}

void allocate_shrink_job_json(const struct allocate_shrink *sh, size_t i, json_t *o) {
  json_object_set_new(o, "anchor_w", json_real(sh->anchor[i]));
  json_object_set_new(o, "shrink_gain", json_real(sh->gain[i]));
  json_object_set_new(o, "shrink_loss", json_real(sh->loss[i]));
}

void allocate_shrink_print(const struct allocate_shrink *sh) {
  if (sh->kept_anchors)
    printf("shrink: curves shrunk toward the equal cut by %g SDs of a PFI error of SD %g; no "
           "move beats the equal cut on that pessimistic bound: the equal cut is kept\n",
           sh->z, sh->pfi_sd);
  else
    printf("shrink: curves shrunk toward the equal cut by %g SDs of a PFI error of SD %g; %zu "
           "of %zu jobs moved from it\n",
           sh->z, sh->pfi_sd, sh->moved, sh->n);
}
