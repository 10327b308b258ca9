/* The provenance column of runs (include/pflex/runs_provenance.h). */
#include <stdbool.h>

#include "pflex/runs_provenance.h"

/* Run i's value in extra column k (has: the column exists). */
static enum pflex_provenance run_value(const struct pflex_runset *set, bool has, size_t k,
                                       size_t i) {
  enum pflex_provenance p;
  if (!has || !set->runs[i].extra || pflex_provenance_parse(set->runs[i].extra[k], &p))
    return PFLEX_PROV_UNKNOWN;
  return p;
}

enum pflex_provenance pflex_run_provenance(const struct pflex_runset *set, size_t i) {
  size_t k = 0;
  bool has = pflex_runset_find_column(set, PFLEX_PROVENANCE_COLUMN, &k) == 0;
  return i < set->n ? run_value(set, has, k, i) : PFLEX_PROV_UNKNOWN;
}

enum pflex_provenance pflex_runs_provenance(const struct pflex_runset *set, const size_t *idx,
                                            size_t n) {
  size_t count = idx ? n : set->n, k = 0;
  if (!count) return PFLEX_PROV_UNKNOWN;
  bool has = pflex_runset_find_column(set, PFLEX_PROVENANCE_COLUMN, &k) == 0;
  enum pflex_provenance p = PFLEX_PROV_MEASURED; /* the strongest: every run can only lower it */
  for (size_t j = 0; j < count; j++) {
    size_t i = idx ? idx[j] : j;
    if (i < set->n) p = pflex_provenance_combine(p, run_value(set, has, k, i));
  }
  return p;
}

int pflex_runs_set_provenance(struct pflex_runset *set, enum pflex_provenance p) {
  for (size_t i = 0; i < set->n; i++) {
    int err = pflex_runset_set_extra(set, i, PFLEX_PROVENANCE_COLUMN, pflex_provenance_name(p));
    if (err) return err;
  }
  return 0;
}
