/* Every group's prediction-error SD over the other folds at once
 * (pflex_shrink_fold_sds, include/pflex/shrink.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "core/sort_index.h"
#include "pflex/shrink.h"

/* One fold's squared errors (ss) and how many (m), over its rows idx[0 .. len). */
static void fold_sum(const double *pred, const double *truth, const size_t *idx, size_t len,
                     double *ss, double *m) {
  *ss = 0, *m = 0;
  for (size_t r = 0; r < len; r++) {
    double e = pred[idx[r]] - truth[idx[r]];
    if (isfinite(e)) *ss += e * e, *m += 1;
  }
}

/* The rows sorted by fold (ties by row), and where each fold starts
 * (start[0 .. nf], start[nf] = n); no folds: every row its own. */
static int fold_runs(const int *fold, size_t n, size_t *idx, double *key, size_t *start,
                     size_t *ret_nf) {
  for (size_t i = 0; i < n; i++) {
    idx[i] = i;
    key[i] = fold ? (double)fold[i] : 0; /* an int is exact in a double */
  }
  int err = fold ? pflex__sort_index(idx, n, key, sizeof *key, 0) : 0;
  size_t nf = 0;
  for (size_t r = 0; !err && r < n; r++)
    if (r == 0 || !fold || key[idx[r]] != key[idx[r - 1]]) start[nf++] = r;
  start[nf] = n;
  *ret_nf = nf;
  return err;
}

int pflex_shrink_fold_sds(const double *pred, const double *truth, const int *fold, size_t n,
                          double *ret_sd) {
  size_t *idx = malloc((n ? n : 1) * sizeof *idx), *start = malloc((n + 1) * sizeof *start), nf = 0;
  double *key = calloc(n ? n : 1, sizeof *key);
  /* Per fold f (in sorted order): its own sums (ss, count) at own[2 f], and
   * those of the folds before it (pre[2 f]) and from it on (suf[2 f]). */
  double *own = malloc(2 * (n + 1) * sizeof *own), *pre = malloc(2 * (n + 1) * sizeof *pre),
         *suf = malloc(2 * (n + 1) * sizeof *suf);
  int err = idx && start && key && own && pre && suf ? 0 : -ENOMEM;
  if (!err) err = fold_runs(fold, n, idx, key, start, &nf);
  for (size_t f = 0; !err && f < nf; f++)
    fold_sum(pred, truth, idx + start[f], start[f + 1] - start[f], &own[2 * f], &own[2 * f + 1]);
  for (size_t f = 0; !err && f <= nf; f++)
    for (int c = 0; c < 2; c++)
      pre[2 * f + c] = f ? pre[2 * (f - 1) + c] + own[2 * (f - 1) + c] : 0;
  for (size_t f = nf + 1; !err && f-- > 0;)
    for (int c = 0; c < 2; c++)
      suf[2 * f + c] = f < nf ? suf[2 * (f + 1) + c] + own[2 * f + c] : 0;
  for (size_t f = 0; !err && f < nf; f++) {
    double ss = pre[2 * f] + suf[2 * (f + 1)], m = pre[2 * f + 1] + suf[2 * (f + 1) + 1];
    for (size_t r = start[f]; r < start[f + 1]; r++)
      ret_sd[idx[r]] = m > 0 ? sqrt(ss / m) : NAN;
  }
  free(idx);
  free(start);
  free(key);
  free(own);
  free(pre);
  free(suf);
  return err;
}
