/* The allocator's first step, resolving each job's bounds (alloc_internal.h,
 * pflex__alloc_prep_job and pflex__alloc_prepare), and jobs prepared once
 * for many runs (include/pflex/alloc.h, pflex_alloc_prepare): their
 * resolved bounds, sums and curve pointers. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_internal.h"
#include "pflex/curve.h"

/* Whether job j's throughput stays within PFLEX_ALLOC_MAX_TPUT: its given
 * T_max, its curve's value at P_max and every measured point. */
static bool tput_in_range(const struct pflex_alloc_job *j) {
  if (j->t_max > PFLEX_ALLOC_MAX_TPUT || j->min_tput > PFLEX_ALLOC_MAX_TPUT) return false;
  if (!j->curve) return true;
  size_t np;
  const struct pflex_curve_point *pts = pflex_curve_points(j->curve, &np);
  for (size_t k = 0; k < np; k++)
    if (!(pts[k].tput <= PFLEX_ALLOC_MAX_TPUT)) return false;
  double t = pflex_curve_t_max(j->curve);
  return !(fabs(t) > PFLEX_ALLOC_MAX_TPUT);
}

int pflex__alloc_prep_job(const struct pflex_alloc_job *j, struct pflex__prep *p,
                          bool *ret_floor_bad) {
  const struct pflex_curve *c = j->curve;
  if (j->gpus <= 0 || !(j->weight >= 0) || !isfinite(j->weight)) return -EINVAL;
  if (j->weight > PFLEX_ALLOC_MAX_WEIGHT || !tput_in_range(j)) return -ERANGE;
  p->cap_min = j->cap_min_w > 0 ? j->cap_min_w : PFLEX_ALLOC_CAP_MIN_W;
  p->cap_max = j->cap_max_w > 0 ? j->cap_max_w : PFLEX_ALLOC_CAP_MAX_W;
  if (j->p_max > 0)
    p->hi = j->p_max;
  else if (c)
    p->hi = pflex_curve_p_max(c);
  else
    return -EINVAL;
  if (j->p_min > 0)
    p->lo = j->p_min;
  else if (c)
    p->lo = pflex_curve_p_min(c);
  else /* no curve: the least power the GPU caps allow */
    p->lo = fmin(p->hi, j->gpus * p->cap_min);
  if (!isfinite(p->hi) || !(p->lo <= p->hi)) return -EINVAL;
  if (p->hi > PFLEX_ALLOC_MAX_W) return -ERANGE;
  /* T_max matters to the pfi strategy only (share_weights): evaluated there. */
  p->tmax = j->t_max > 0 ? j->t_max : NAN;
  *ret_floor_bad = false;
  if (j->min_tput > 0) {
    double pf;
    if (!c) return -EINVAL;
    int err = pflex_curve_inverse(c, j->min_tput, &pf);
    if (err == -ERANGE || (err == 0 && pf > p->hi)) {
      *ret_floor_bad = true;
      pf = p->hi;
    } else if (err) {
      return err;
    }
    if (pf > p->lo) p->lo = pf;
  } else if (!(j->min_tput >= 0)) {
    return -EINVAL;
  }
  return 0;
}

/* Whether jobs a and b give the same pflex__alloc_prep_job result: the
 * fields it reads (weight only for its check) are equal. */
static bool same_prep(const struct pflex_alloc_job *a, const struct pflex_alloc_job *b) {
  return a->curve == b->curve && a->gpus == b->gpus && a->weight == b->weight &&
         a->p_min == b->p_min && a->p_max == b->p_max && a->t_max == b->t_max &&
         a->cap_min_w == b->cap_min_w && a->cap_max_w == b->cap_max_w &&
         a->min_tput == b->min_tput;
}

#define PREP_MEMO 64
int pflex__alloc_prepare(const struct pflex_alloc_job *jobs, size_t n, struct pflex__prep *pr,
                         double *ret_min_w, double *ret_max_w, bool *ret_floor_infeasible) {
  double min_w = 0, max_w = 0;
  bool infeasible = false;
  /* Jobs of a workload often repeat one job's data (the study's jobs of a
   * group): such a job copies the last one seen with the same curve
   * (direct-mapped) instead of resolving its bounds again; the same bits. */
  struct {
    size_t i;
    bool bad;
  } memo[PREP_MEMO];
  for (size_t k = 0; k < PREP_MEMO; k++)
    memo[k].i = SIZE_MAX, memo[k].bad = false;
  for (size_t i = 0; i < n; i++) {
    bool bad = false;
    uint64_t h = pflex__alloc_mix(0, (uint64_t)(uintptr_t)jobs[i].curve);
    size_t k = (size_t)(h >> 58), o = memo[k].i;
    if (o < i && same_prep(&jobs[o], &jobs[i])) {
      pr[i] = pr[o];
      bad = memo[k].bad;
    } else {
      int err = pflex__alloc_prep_job(&jobs[i], &pr[i], &bad);
      if (err) return err;
      memo[k].i = i, memo[k].bad = bad;
    }
    infeasible |= bad;
    min_w += pr[i].lo;
    max_w += pr[i].hi;
  }
  *ret_min_w = min_w;
  *ret_max_w = max_w;
  *ret_floor_infeasible = infeasible;
  return 0;
}

struct pflex_alloc_prepared {
  size_t n;
  struct pflex__prep *pr;
  const struct pflex_curve **curve; /* each job's, to tell other jobs apart */
  double min_w, max_w;
  bool floor_bad;
  struct pflex__pass1 pass1; /* optimal's first pass (alloc.c) */
};

void pflex__pass1_reset(struct pflex__pass1 *k, int s) {
  free(k->weight);
  free(k->mult);
  free(k->jn);
  free(k->dist);
  free(k->rep);
  free(k->off);
  free(k->segs);
  *k = (struct pflex__pass1){.state = s};
}

void pflex_alloc_prepared_free(struct pflex_alloc_prepared *pp) {
  if (!pp) return;
  pflex__pass1_reset(&pp->pass1, 0);
  free(pp->pr);
  free(pp->curve);
  free(pp);
}

int pflex_alloc_prepare(const struct pflex_alloc_job *jobs, size_t n,
                        struct pflex_alloc_prepared **ret) {
  if ((!jobs && n) || !ret) return -EINVAL;
  struct pflex_alloc_prepared *pp = calloc(1, sizeof *pp);
  if (!pp) return -ENOMEM;
  pp->n = n;
  pp->pr = malloc((n ? n : 1) * sizeof *pp->pr);
  pp->curve = malloc((n ? n : 1) * sizeof *pp->curve);
  int err = pp->pr && pp->curve ? 0 : -ENOMEM;
  if (!err) err = pflex__alloc_prepare(jobs, n, pp->pr, &pp->min_w, &pp->max_w, &pp->floor_bad);
  for (size_t i = 0; !err && i < n; i++)
    pp->curve[i] = jobs[i].curve;
  if (err) {
    pflex_alloc_prepared_free(pp);
    return err;
  }
  *ret = pp;
  return 0;
}

/* pflex__alloc_prep_job's checks of a job's weight, in its order. */
static int weight_check(const struct pflex_alloc_job *j) {
  if (!(j->weight >= 0) || !isfinite(j->weight)) return -EINVAL;
  return j->weight > PFLEX_ALLOC_MAX_WEIGHT ? -ERANGE : 0;
}

int pflex__alloc_prepared_take(struct pflex_alloc_prepared *pp, const struct pflex_alloc_job *jobs,
                               size_t n, struct pflex__prep *pr, double *ret_min_w,
                               double *ret_max_w, bool *ret_floor_infeasible,
                               struct pflex__pass1 **ret_pass1) {
  *ret_pass1 = NULL;
  if (pp->n != n) return pflex__alloc_prepare(jobs, n, pr, ret_min_w, ret_max_w, ret_floor_infeasible);
  for (size_t i = 0; i < n; i++) {
    /* in job order, as pflex__alloc_prepare would meet the first error */
    if (jobs[i].curve != pp->curve[i])
      return pflex__alloc_prepare(jobs, n, pr, ret_min_w, ret_max_w, ret_floor_infeasible);
    double w = jobs[i].weight;
    if (!(w >= 0 && w <= PFLEX_ALLOC_MAX_WEIGHT)) return weight_check(&jobs[i]);
  }
  memcpy(pr, pp->pr, n * sizeof *pr);
  *ret_min_w = pp->min_w;
  *ret_max_w = pp->max_w;
  *ret_floor_infeasible = pp->floor_bad;
  *ret_pass1 = &pp->pass1;
  return 0;
}
