/* The reference (uncapped) run of a sweep group and why it is that run
 * (include/pflex/reference.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "pflex/gpu_models.h"
#include "pflex/reference.h"

void pflex_group_reference(const struct pflex_runset *set, const struct pflex_group *g,
                           struct pflex_reference *ret) {
  const struct pflex_run *top = &set->runs[g->uncapped];
  const struct pflex_gpu_model *m = pflex_gpu_model_find(top->gpu);
  *ret = (struct pflex_reference){.cap_w = top->cap_w, .default_w = m ? m->default_limit_w : NAN};
  if (!m)
    ret->kind = PFLEX_REFERENCE_UNKNOWN_GPU;
  else if (top->cap_w < m->default_limit_w - PFLEX_REFERENCE_TOL_W)
    ret->kind = PFLEX_REFERENCE_BELOW_DEFAULT;
  else
    ret->kind = PFLEX_REFERENCE_DEFAULT;
}

int pflex_reference_note(const struct pflex_reference *ref, const char *group, const char *gpu,
                         char *buf, size_t size) {
  switch (ref->kind) {
  case PFLEX_REFERENCE_DEFAULT: return -ENOENT;
  case PFLEX_REFERENCE_BELOW_DEFAULT:
    snprintf(buf, size,
             "group '%s': no run at the %s's %g W default limit: its highest cap, %g W, is the "
             "reference (uncapped) run",
             group, gpu, ref->default_w, ref->cap_w);
    return 0;
  case PFLEX_REFERENCE_UNKNOWN_GPU:
    snprintf(buf, size,
             "group '%s': GPU type '%s' is not in pflex's GPU table: its highest cap, %g W, is the "
             "reference (uncapped) run",
             group, gpu, ref->cap_w);
    return 0;
  }
  return -ENOENT;
}

int pflex_runset_check_reference(const struct pflex_runset *set, double cap_w,
                                 struct pflex_diag *diag) {
  struct pflex_group *g = NULL;
  size_t ng = 0;
  int err = pflex_runset_groups(set, &g, &ng);
  for (size_t j = 0; !err && j < ng; j++) {
    const struct pflex_run *top = &set->runs[g[j].uncapped];
    if (fabs(top->cap_w - cap_w) > PFLEX_REFERENCE_TOL_W)
      err = pflex_diag_set(diag, -PFLEX_E_DATA, set->source ? set->source : "", top->line, "cap_w",
                           "group '%s' has no run at the reference cap %g W (its highest cap "
                           "is %g W)",
                           g[j].name, cap_w, top->cap_w);
  }
  pflex_groups_free(g, ng);
  return err;
}
