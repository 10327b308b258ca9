/* Curve templates: measured power-throughput curves of other jobs (a runs
 * file, each sweep group one curve) that give a job's curve its shape before
 * and while its own caps refine it (pflex/refine.h, PFLEX_REFINE_DATA, as
 * the study's out-of-sample curves). Without templates the controller uses
 * the parametric family (PFLEX_REFINE_FAMILY). */
#ifndef CTL_TEMPLATES_H
#define CTL_TEMPLATES_H

#include <stddef.h>

#include "pflex/curve.h"
#include "pflex/jobs.h"

struct ctl_templates {
  struct pflex_jobset set;                 /* the groups and their measured curves */
  const struct pflex_curve *const *curves; /* the curves (into set), n of them */
  size_t n;
};

/* Reads a runs CSV (docs/formats.md) into templates: at least two groups
 * with a measured curve. -EINVAL / -errno with err naming the file, line
 * and column. */
int ctl_templates_load(const char *path, struct ctl_templates *ret, char *err, size_t errlen);
void ctl_templates_release(struct ctl_templates *t);

#endif
