/* Curve templates from a runs file (templates.h). */
#include "controller/templates.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/inventory.h"

#include "pflex/runs_csv.h"

int ctl_templates_load(const char *path, struct ctl_templates *ret, char *err, size_t errlen) {
  struct pflex_runset runs;
  struct pflex_diag d;
  pflex_diag_clear(&d);
  struct pflex_runs_read_opts opts = {0};
  char name[64];
  int fd = ctl_open_trusted_name(path, name, sizeof name, err, errlen);
  if (fd < 0) return fd;
  int rc = pflex_runs_read_csv(name, &opts, &runs, &d);
  close(fd);
  struct ctl_templates t = {0};
  pflex_jobset_init(&t.set);
  if (rc == 0) {
    rc = pflex_jobs_from_runs(&runs, &t.set, &d);
    pflex_runset_release(&runs);
  }
  if (rc < 0) {
    char where[128] = "";
    if (d.line) snprintf(where, sizeof where, "line %zu: ", d.line);
    if (d.column[0])
      snprintf(where + strlen(where), sizeof where - strlen(where), "column '%s': ", d.column);
    snprintf(err, errlen, "templates '%s': %s%s", path, where,
             d.message[0] ? d.message : pflex_strerror(rc));
    pflex_jobset_release(&t.set);
    return rc;
  }
  const struct pflex_curve **v = calloc(t.set.n ? t.set.n : 1, sizeof *v);
  for (size_t i = 0; v && i < t.set.n; i++)
    if (t.set.curves[i]) v[t.n++] = t.set.curves[i];
  if (!v || t.n < 2) {
    snprintf(err, errlen, "templates '%s': %s", path,
             v ? "needs at least two sweep groups with a measured curve" : "out of memory");
    free(v);
    pflex_jobset_release(&t.set);
    return v ? -EINVAL : -ENOMEM;
  }
  t.curves = v;
  *ret = t;
  return 0;
}

void ctl_templates_release(struct ctl_templates *t) {
  free((void *)t->curves);
  pflex_jobset_release(&t->set);
  memset(t, 0, sizeof *t);
}
