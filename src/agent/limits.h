/* The one call through which pflexd changes power limits: a set of per-GPU
 * limits applied all-or-nothing (restore records first, rollback on any
 * failure). It forwards to the library's pflex_restore_apply_limits once that
 * exists; until then limits.c carries an equivalent built on
 * pflex_restore_record / pflex_restore_set_limit. */
#ifndef PFLEX_AGENT_LIMITS_H
#define PFLEX_AGENT_LIMITS_H

#include <stdbool.h>
#include <stddef.h>

#include "pflex/gpu.h"
#include "pflex/restore.h"

struct agent_limit_change {
  unsigned index, mw;      /* in: GPU and requested limit */
  unsigned before_mw;      /* out: the limit before */
  unsigned applied_mw;     /* out: the limit set (mw, or clamped into range) */
  bool clamped;            /* out: applied_mw != mw because of the range */
};

enum { AGENT_APPLY_CLAMP = 1u << 0, AGENT_APPLY_DRY_RUN = 1u << 1 };

/* Applies every change or none. Without AGENT_APPLY_CLAMP a limit outside a
 * GPU's range is -ERANGE; with AGENT_APPLY_DRY_RUN only the outputs are
 * filled. On failure *ret_failed (may be NULL) is the position of the change
 * that failed and every GPU is back at its before_mw. */
int agent_limits_apply(struct pflex_restore *rs, struct pflex_gpu *gpu,
                       struct agent_limit_change *changes, size_t n, unsigned flags,
                       size_t *ret_failed);

#endif
