/* The closed loop's dither: a job the loop would observe again at the same
 * power is moved, budget-neutral, so that its next observation is at a
 * second one and its refinement measures a slope (src/core/study_dither.h). */
#include "study_dither.h"

#include <math.h>
#include <stdbool.h>

/* idx[0..nc): the candidates, by descending move (ties in index order). */
static size_t candidates(size_t n, const double *p, const double *pobs, const double *pm,
                         double near, size_t *idx) {
  size_t nc = 0;
  for (size_t j = 0; j < n; j++) {
    if (!(fabs(p[j] - pobs[j]) <= near * pm[j])) continue;
    size_t i = nc++;
    for (; i > 0 && pm[idx[i - 1]] < pm[j]; i--)
      idx[i] = idx[i - 1];
    idx[i] = j;
  }
  return nc;
}

/* The sign of each candidate's move: first of those that fit one way only,
 * then of the others, each keeping the running sum nearest zero (a tie:
 * the smaller move); mv[j] the move (0: none fits the bounds). Returns the
 * sum. */
static double choose(const size_t *idx, size_t nc, const double *p, const double *pobs,
                     const double *lo, const double *hi, const double *pm, double d, double *mv) {
  double sum = 0;
  for (int both = 0; both < 2; both++)
    for (size_t c = 0; c < nc; c++) {
      size_t j = idx[c];
      double up = pobs[j] + d * pm[j] - p[j], down = pobs[j] - d * pm[j] - p[j];
      bool can_up = p[j] + up <= hi[j], can_down = p[j] + down >= lo[j];
      if ((can_up && can_down) != both) continue;
      if (both)
        mv[j] =
            fabs(sum + up) < fabs(sum + down) || (fabs(sum + up) == fabs(sum + down) && up < -down)
                ? up
                : down;
      else
        mv[j] = can_up ? up : can_down ? down : 0;
      sum += mv[j];
    }
  return sum;
}

size_t pflex__study_dither(size_t n, double *p, const double *pobs, const double *lo,
                           const double *hi, const double *pm, double d, double near, size_t *idx,
                           double *mv) {
  if (!(d > near)) return 0;
  size_t nc = candidates(n, p, pobs, pm, near, idx);
  for (size_t j = 0; j < n; j++)
    mv[j] = 0;
  double sum = choose(idx, nc, p, pobs, lo, hi, pm, d, mv), side = 0;
  for (size_t c = 0; c < nc; c++)
    if (sum > 0 ? mv[idx[c]] > 0 : mv[idx[c]] < 0) side += mv[idx[c]];
  /* The side that is over: scaled so that the moves sum to zero. */
  double scale = side != 0 ? 1 - sum / side : 1;
  double before = 0, after = 0;
  size_t moved = 0;
  for (size_t c = 0; c < nc; c++) {
    size_t j = idx[c];
    if (sum > 0 ? mv[j] > 0 : mv[j] < 0) mv[j] *= scale;
    before += p[j];
    p[j] += mv[j];
    after += p[j];
    moved += mv[j] != 0;
  }
  /* Rounding: never more power than before (the largest move gives it back). */
  for (size_t c = 0; c < nc && after > before; c++)
    if (p[idx[c]] - (after - before) >= lo[idx[c]]) {
      p[idx[c]] -= after - before;
      break;
    }
  return moved;
}
