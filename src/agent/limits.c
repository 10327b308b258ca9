/* All-or-nothing limit changes (limits.h): the interim implementation, the
 * same steps as `pflex cap set`. */
#include <errno.h>
#include <signal.h>

#include "agent/limits.h"

static int check(struct pflex_gpu *gpu, struct agent_limit_change *c, unsigned flags) {
  unsigned lo, hi;
  int err = pflex_gpu_constraints(gpu, c->index, &lo, &hi, NULL);
  if (!err) err = pflex_gpu_get_limit(gpu, c->index, &c->before_mw);
  if (err) return err;
  enum pflex_limit_fit fit = pflex_gpu_limit_fit(c->mw, lo, hi, &c->applied_mw);
  c->clamped = fit != PFLEX_LIMIT_INSIDE;
  return c->clamped && !(flags & AGENT_APPLY_CLAMP) ? -ERANGE : 0;
}

int agent_limits_apply(struct pflex_restore *rs, struct pflex_gpu *gpu,
                       struct agent_limit_change *changes, size_t n, unsigned flags,
                       size_t *ret_failed) {
  for (size_t k = 0; k < n; k++) {
    int err = check(gpu, &changes[k], flags);
    if (err) {
      if (ret_failed) *ret_failed = k;
      return err;
    }
  }
  if (flags & AGENT_APPLY_DRY_RUN) return 0;
  /* Signals wait until the set is complete or undone. */
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old);
  int err = 0;
  size_t done = 0;
  for (; done < n; done++) {
    err = pflex_restore_record(rs, gpu, changes[done].index);
    if (!err) err = pflex_restore_set_limit(rs, gpu, changes[done].index, changes[done].applied_mw);
    if (err) break;
  }
  if (err) {
    if (ret_failed) *ret_failed = done;
    for (size_t k = 0; k < done; k++)
      (void)pflex_restore_set_limit(rs, gpu, changes[k].index, changes[k].before_mw);
  }
  sigprocmask(SIG_SETMASK, &old, NULL);
  return err;
}
