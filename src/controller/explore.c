/* Exploration: a binding probe cap for a job whose curve nothing pins (explore.h). */
#include "controller/explore.h"

#include <math.h>

/* A cap binds when it is this far under the job's draw per GPU (jobs.c's BINDING). */
#define BINDS 0.97

bool ctl_explore_active(const struct ctl_job *j) {
  return j->explore_cap_w > 0;
}

/* The curve has an observation below P_max (pflex_refine_confidence > 0). */
static bool pinned(const struct ctl_job *j) {
  return ctl_job_confidence(j) > 0;
}

/* The probe's cap per GPU: CTL_EXPLORE_DEPTH of the draw, in range. */
static double probe_cap(const struct ctl_job *j) {
  return floor(fmin(fmax(CTL_EXPLORE_DEPTH * j->p_max / j->gpus, j->min_w), j->max_w));
}

bool ctl_explore_wanted(const struct ctl_job *j) {
  bool measured = j->p_max > 0 && j->t_max > 0 && j->has_tput && j->gpus > 0;
  bool own_pfi = j->model_pfi > 0; /* predicted from its telemetry (explore.h) */
  if (own_pfi || !j->at_top || j->explored || !measured || pinned(j) || ctl_explore_active(j))
    return false;
  return probe_cap(j) < BINDS * j->p_max / j->gpus; /* else no cap in range binds */
}

void ctl_explore_begin(struct ctl_job *j) {
  j->explore_cap_w = probe_cap(j);
  j->explore_rounds = 0;
  j->cap_w = j->explore_cap_w;
  j->at_top = false;
}

bool ctl_explore_step(struct ctl_job *j, bool placeable) {
  if (!ctl_explore_active(j)) return false;
  j->explore_rounds++;
  if (placeable && !pinned(j) && j->explore_rounds <= CTL_EXPLORE_ROUNDS) return true;
  j->explore_cap_w = 0;
  j->explored = true;
  return false;
}

double ctl_explore_held_w(const struct ctl_job *j) {
  return fmax(j->gpus * j->explore_cap_w, j->power_w);
}
