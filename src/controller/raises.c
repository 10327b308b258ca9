/* Raises wait for the cuts that fund them (raises.h). */
#include <math.h>

#include "controller/raises.h"

/* The limit GPU g holds now: the cap its agent acknowledged, or before any
 * acknowledgement (a restarted controller's first round, the GPUs at their
 * fallback) the limit its agent reports in force. */
static double held_w(const struct ctl_node *nd, size_t g) {
  if (nd->has_acked && nd->acked_w[g] > 0) return nd->acked_w[g];
  const struct ctl_gpu_state *gs = &nd->gpu[g];
  return isfinite(gs->enforced_w) && gs->enforced_w > 0 ? gs->enforced_w : gs->limit_w;
}

/* The job of a GPU whose raise lets it draw more: not one of a job whose cap
 * already sits above its natural draw (plan.c, at_top), nor a GPU without a
 * job (NULL for those). A job given its whole draw again from a cap under it
 * (after a probe, explore.h, or a binding cap) does draw more. */
static struct ctl_job *raises_draw(struct ctl_jobset *js, const struct ctl_node *nd, size_t g) {
  const char *id = nd->gpu[g].job;
  struct ctl_job *j = id[0] ? ctl_jobset_find(js, id) : NULL;
  double held = held_w(nd, g);
  if (!(held > 0 && nd->cap_w[g] > held && j)) return NULL;
  return !j->at_top || held * j->gpus < j->p_max ? j : NULL;
}

double ctl_limit_raises(struct ctl_node *nodes, size_t n, struct ctl_jobset *js, double target_w,
                        double measured_w) {
  double raise = 0, in_flight = ctl_jobset_raises_in_flight(js);
  for (size_t i = 0; i < n; i++) {
    const struct ctl_node *nd = &nodes[i];
    if (!nd->reachable) continue;
    for (size_t g = 0; g < nd->ngpus; g++)
      if (raises_draw(js, nd, g)) raise += nd->cap_w[g] - held_w(nd, g);
  }
  double room = fmax(0.0, target_w - measured_w - in_flight);
  double f = raise > room ? room / raise : 1.0, withheld = 0;
  for (size_t i = 0; raise > 0 && i < n; i++) {
    struct ctl_node *nd = &nodes[i];
    if (!nd->reachable) continue;
    for (size_t g = 0; g < nd->ngpus; g++) {
      double held = held_w(nd, g), want = nd->cap_w[g];
      struct ctl_job *j = raises_draw(js, nd, g);
      if (!j) continue;
      if (f < 1.0) nd->cap_w[g] = floor(held + f * (want - held));
      withheld += want - nd->cap_w[g];
      j->raised_w += nd->cap_w[g] - held;
    }
  }
  return withheld;
}
