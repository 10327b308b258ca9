/* The anchors of a refined curve (refine_internal.h): observations sorted by
 * power, those within a tolerance of each other averaged. Shared by the data
 * shape's knots (refine.c) and the family shape's correction (refine_family.c). */
#include <stdlib.h>

#include "core/refine_internal.h"

static int cmp_pair(const void *a, const void *b) {
  const double *x = a, *y = b;
  return (x[0] > y[0]) - (x[0] < y[0]);
}

void pflex__refine_anchors_merge(struct refine_corr *c, double *pairs, size_t m, double tol) {
  qsort(pairs, m, 2 * sizeof *pairs, cmp_pair);
  c->n = 0;
  for (size_t k = 0; k < m;) {
    size_t e = k;
    double sp = 0, sv = 0;
    while (e < m && pairs[2 * e] - pairs[2 * k] <= tol) {
      sp += pairs[2 * e];
      sv += pairs[2 * e + 1];
      e++;
    }
    c->ap[c->n] = sp / (double)(e - k);
    c->ar[c->n] = sv / (double)(e - k);
    c->n++;
    k = e;
  }
}
