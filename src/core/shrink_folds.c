/* Every group's prediction-error SD over the other folds at once
 * (pflex_shrink_fold_sds, include/pflex/shrink.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "pflex/shrink.h"

struct fold_row {
  int fold;
  size_t i;
};

static int cmp_fold_row(const void *a, const void *b) {
  const struct fold_row *x = a, *y = b;
  if (x->fold != y->fold) return (x->fold > y->fold) - (x->fold < y->fold);
  return (x->i > y->i) - (x->i < y->i);
}

/* One fold's squared errors (ss) and how many (m), over its rows run[0 .. len). */
static void fold_sum(const double *pred, const double *truth, const struct fold_row *run,
                     size_t len, double *ss, double *m) {
  *ss = 0, *m = 0;
  for (size_t r = 0; r < len; r++) {
    double e = pred[run[r].i] - truth[run[r].i];
    if (isfinite(e)) *ss += e * e, *m += 1;
  }
}

int pflex_shrink_fold_sds(const double *pred, const double *truth, const int *fold, size_t n,
                          double *ret_sd) {
  struct fold_row *row = malloc((n ? n : 1) * sizeof *row);
  /* Per fold (in sorted order): its start in row, its sums, and the sums of
   * the folds before it (pre) and after it (suf). */
  size_t *start = malloc((n + 1) * sizeof *start), nf = 0;
  double *pre = malloc(2 * (n + 1) * sizeof *pre), *suf = malloc(2 * (n + 1) * sizeof *suf);
  double *own = malloc(2 * (n ? n : 1) * sizeof *own);
  int err = row && start && pre && suf && own ? 0 : -ENOMEM;
  for (size_t i = 0; !err && i < n; i++) /* no folds: every group its own */
    row[i] = (struct fold_row){fold ? fold[i] : 0, i};
  if (!err && fold) qsort(row, n, sizeof *row, cmp_fold_row);
  for (size_t r = 0; !err && r < n; r++)
    if (r == 0 || !fold || row[r].fold != row[r - 1].fold) start[nf++] = r;
  if (!err) start[nf] = n;
  for (size_t f = 0; !err && f < nf; f++)
    fold_sum(pred, truth, row + start[f], start[f + 1] - start[f], &own[2 * f], &own[2 * f + 1]);
  for (size_t f = 0; !err && f <= nf; f++) {
    pre[2 * f] = f ? pre[2 * (f - 1)] + own[2 * (f - 1)] : 0;
    pre[2 * f + 1] = f ? pre[2 * (f - 1) + 1] + own[2 * (f - 1) + 1] : 0;
  }
  for (size_t f = nf + 1; !err && f-- > 0;) {
    suf[2 * f] = f < nf ? suf[2 * (f + 1)] + own[2 * f] : 0;
    suf[2 * f + 1] = f < nf ? suf[2 * (f + 1) + 1] + own[2 * f + 1] : 0;
  }
  for (size_t f = 0; !err && f < nf; f++) {
    double ss = pre[2 * f] + suf[2 * (f + 1)], m = pre[2 * f + 1] + suf[2 * (f + 1) + 1];
    for (size_t r = start[f]; r < start[f + 1]; r++)
      ret_sd[row[r].i] = m > 0 ? sqrt(ss / m) : NAN;
  }
  free(row);
  free(start);
  free(pre);
  free(suf);
  free(own);
  return err;
}
