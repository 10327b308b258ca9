/* The flat optimal's polish (src/core/alloc_flat.c): a measured curve's
 * pieces as cubics, and the power at which one job's weighted slope meets
 * the threshold slope on its real curve inside a bracket of its sampled
 * hull. See alloc_flat_polish.h. */
#include "core/alloc_flat_polish.h"
#include "core/curve_internal.h"

#include <math.h>

#include "pflex/curve.h"

/* A piece's doubles (PFLEX__FLAT_PIECE): x0, y0, b, c, d; its end x1 is
 * the next one's x0 (the last one's follows it). */
enum { X0, Y0, B, C, D, X1 };

size_t pflex__flat_pieces(const struct pflex_curve *c, double lo, double hi, double *out) {
  size_t np;
  const struct pflex_curve_point *pt = pflex_curve_points(c, &np);
  if (!pt || np < 2 || pflex_curve_kind(c) != PFLEX_CURVE_MEASURED) return 0;
  size_t m = 0;
  for (size_t k = 0; k + 1 < np; k++) {
    double x0 = pt[k].power_w, x1 = pt[k + 1].power_w, cubic[4];
    if (!(x1 > x0) || x1 <= lo || x0 >= hi) continue;
    /* The curve's own cubic on the interval, as pflex_curve_eval uses it.
     * (Fitted through four of its values before: a third of a fill's
     * instructions; bench/README.md, twelfth wave.) */
    if (!pflex__curve_interval_cubic(c, k, cubic)) return 0;
    if (m && !(out[PFLEX__FLAT_PIECE * m] == x0)) return 0; /* not contiguous: no pieces */
    double *q = &out[PFLEX__FLAT_PIECE * m++];
    q[X0] = x0, q[X1] = x1;
    q[Y0] = cubic[0], q[B] = cubic[1], q[C] = cubic[2], q[D] = cubic[3];
  }
  return m;
}

static double slope_at(const double *q, double t) {
  return q[B] + t * (2 * q[C] + 3 * q[D] * t);
}

static double curv_at(const double *q, double t) {
  return 2 * q[C] + 6 * q[D] * t;
}

/* The t in [ta, tb] where the slope of piece q meets s (the slope falls
 * there: q is concave on it), from the quadratic's stable roots. */
static double meet(const double *q, double s, double ta, double tb) {
  double a = 3 * q[D], b = 2 * q[C], c = q[B] - s, t;
  if (fabs(a) * (tb - ta) <= 1e-12 * fabs(b)) {
    t = -c / b;
  } else {
    double disc = pflex__flat_fmax(b * b - 4 * a * c, 0), r = -(b + copysign(sqrt(disc), b)) / 2;
    double t1 = r / a, t2 = r != 0 ? c / r : t1;
    t = fabs(t1 - 0.5 * (ta + tb)) <= fabs(t2 - 0.5 * (ta + tb)) ? t1 : t2;
  }
  return pflex__flat_fmin(pflex__flat_fmax(t, ta), tb);
}

/* w f - lambda x on piece q at t. */
static double gain(const double *q, double t, double w, double lambda) {
  return w * (q[Y0] + t * (q[B] + t * (q[C] + t * q[D]))) - lambda * (q[X0] + t);
}

/* The best point so far for w f - lambda x: its gain, where (t on piece
 * k), and the part [ta, tb] of the piece it was found on. */
struct best {
  double g, t, ta, tb, margin;
  size_t k;
};

/* A point replaces the best only when it gains more by margin: the
 * greedy's own power (the first considered) stays where another is as good
 * up to rounding. */
static void consider(struct best *bst, size_t k, double g, double t, double ta, double tb) {
  if (g > bst->g + bst->margin) *bst = (struct best){g, t, ta, tb, bst->margin, k};
}

/* On piece q (number k) over [ta, tb]: its ends, and where the slope
 * meets lambda / w on its concave part (the curvature 2c + 6dt is linear
 * in t, so that part is one interval). */
static void best_on(const double *q, size_t k, double ta, double tb, double w, double lambda,
                    struct best *bst) {
  consider(bst, k, gain(q, ta, w, lambda), ta, ta, tb);
  consider(bst, k, gain(q, tb, w, lambda), tb, ta, tb);
  double lo = ta, hi = tb, s = lambda / w;
  if (q[D] > 0)
    hi = pflex__flat_fmin(hi, -q[C] / (3 * q[D]));
  else if (q[D] < 0)
    lo = pflex__flat_fmax(lo, -q[C] / (3 * q[D]));
  else if (q[C] > 0)
    return;
  if (!(lo < hi) || slope_at(q, lo) < s || slope_at(q, hi) > s) return;
  double t = meet(q, s, lo, hi);
  consider(bst, k, gain(q, t, w, lambda), t, lo, hi);
}

double pflex__flat_polish_piece(const double *q, double xa, double xb, double w, double lambda,
                                double *ret_dpdl) {
  double s = lambda / w, ta = xa - q[X0], tb = xb - q[X0];
  *ret_dpdl = 0;
  if (slope_at(q, ta) <= s) return xa; /* already below at its start */
  if (slope_at(q, tb) >= s) return xb; /* still above at its end */
  double t = meet(q, s, ta, tb), cv = curv_at(q, t);
  if (cv < 0) *ret_dpdl = 1 / (w * cv);
  return q[X0] + t;
}

/* Whether the pieces from k on are concave on [a, b]: each one's
 * curvature at most 0 at both ends of its part, and no slope rising where
 * two meet. */
static bool concave_on(const double *pc, size_t npc, size_t k, double a, double b) {
  double prev = INFINITY;
  for (; k < npc && pc[PFLEX__FLAT_PIECE * k] < b; k++) {
    const double *q = &pc[PFLEX__FLAT_PIECE * k];
    double ta = pflex__flat_fmax(a, q[X0]) - q[X0], tb = pflex__flat_fmin(b, q[X1]) - q[X0];
    if (curv_at(q, ta) > 0 || curv_at(q, tb) > 0 || slope_at(q, ta) > prev) return false;
    prev = slope_at(q, tb);
  }
  return true;
}

/* pflex__flat_polish where the pieces are concave on [a, b]: the slope
 * falls along it, so the answer is where it meets lambda / w. */
static double on_concave(const double *pc, size_t npc, size_t k, double w, double lambda, double a,
                         double b, size_t *ret_k, double ret_range[2], double *ret_dpdl) {
  for (; k < npc; k++) {
    const double *q = &pc[PFLEX__FLAT_PIECE * k];
    bool last = k + 1 == npc || q[X1] >= b;
    double xa = pflex__flat_fmax(a, q[X0]), xb = pflex__flat_fmin(b, q[X1]);
    if (last || slope_at(q, xb - q[X0]) < lambda / w) {
      *ret_k = k;
      ret_range[0] = xa, ret_range[1] = xb;
      return pflex__flat_polish_piece(q, xa, xb, w, lambda, ret_dpdl);
    }
  }
  return NAN; /* not reached: the loop ends at the last piece */
}

double pflex__flat_polish(const double *pc, size_t npc, double w, double lambda, double a, double b,
                          double x, size_t *ret_k, double ret_range[2], double *ret_dpdl) {
  struct best bst = {-INFINITY, NAN, 0, 0, 0, 0};
  size_t k = 0, kx;
  *ret_dpdl = 0;
  while (k < npc && pc[PFLEX__FLAT_PIECE * k + X1] <= a)
    k++;
  if (k >= npc || pc[PFLEX__FLAT_PIECE * k] > a) return NAN;
  for (kx = k; kx + 1 < npc && pc[PFLEX__FLAT_PIECE * kx + X1] < x;)
    kx++;
  if (concave_on(pc, npc, k, a, b))
    return on_concave(pc, npc, k, w, lambda, a, b, ret_k, ret_range, ret_dpdl);
  const double *qx = &pc[PFLEX__FLAT_PIECE * kx];
  double gx = gain(qx, x - qx[0], w, lambda);
  bst =
      (struct best){gx, x - qx[0], x - qx[0], x - qx[0], 1e-12 * (fabs(gx) + fabs(lambda * x)), kx};
  for (; k < npc && pc[PFLEX__FLAT_PIECE * k] < b; k++) {
    const double *q = &pc[PFLEX__FLAT_PIECE * k];
    best_on(q, k, pflex__flat_fmax(a, q[X0]) - q[X0], pflex__flat_fmin(b, q[X1]) - q[X0], w, lambda,
            &bst);
  }
  if (bst.k == kx && bst.t == x - qx[0]) return x; /* nothing better than the greedy's */
  const double *q = &pc[PFLEX__FLAT_PIECE * bst.k];
  double cv = curv_at(q, bst.t);
  if (bst.t > bst.ta && bst.t < bst.tb && cv < 0) *ret_dpdl = 1 / (w * cv);
  *ret_k = bst.k;
  ret_range[0] = q[X0] + bst.ta, ret_range[1] = q[X0] + bst.tb;
  return q[X0] + bst.t;
}

double pflex__flat_value(const double *pc, size_t npc, double x) {
  size_t k = 0;
  while (k + 1 < npc && pc[PFLEX__FLAT_PIECE * k + X1] < x)
    k++;
  return gain(&pc[PFLEX__FLAT_PIECE * k], x - pc[PFLEX__FLAT_PIECE * k], 1, 0);
}

/* ---- pair moves for small workloads ---------------------------------------- */

/* Job i's weighted value at x, or -INFINITY outside its bounds. */
static double pair_value(const struct pflex__flat_jobs *s, size_t i, double x) {
  if (!(x >= s->lo[i] && x <= s->hi[i])) return -INFINITY;
  return s->w[i] * pflex__flat_value(s->pc[i], s->npc[i], x);
}

struct pair_move {
  double gain;
  size_t to, from;
  double amount;
};

/* The best move of one amount: the receiver and the donor (distinct) whose
 * gains sum highest, from each side's best two. */
static void best_of_amount(const struct pflex__flat_jobs *s, const double *p, const double *f,
                           double ds, struct pair_move *best) {
  size_t up[2] = {SIZE_MAX, SIZE_MAX}, dn[2] = {SIZE_MAX, SIZE_MAX};
  double gu[2] = {-INFINITY, -INFINITY}, gd[2] = {-INFINITY, -INFINITY};
  for (size_t i = 0; i < s->n; i++) {
    double u = pair_value(s, i, p[i] + ds) - f[i], d = pair_value(s, i, p[i] - ds) - f[i];
    if (u > gu[1]) {
      int at = u > gu[0] ? 0 : 1;
      gu[1] = gu[0], up[1] = up[0];
      gu[at] = u, up[at] = i;
    }
    if (d > gd[1]) {
      int at = d > gd[0] ? 0 : 1;
      gd[1] = gd[0], dn[1] = dn[0];
      gd[at] = d, dn[at] = i;
    }
  }
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      if (up[a] != SIZE_MAX && dn[b] != SIZE_MAX && up[a] != dn[b] && gu[a] + gd[b] > best->gain)
        *best = (struct pair_move){gu[a] + gd[b], up[a], dn[b], ds};
}

void pflex__flat_pair_search(const struct pflex__flat_jobs *s, double *p) {
  enum { STEPS = 12, ROUNDS = 64, MAXN = 64 };
  double f[MAXN], dmax = 0, obj = 0;
  if (s->n < 2 || s->n > MAXN) return;
  for (size_t i = 0; i < s->n; i++) {
    if (!s->npc[i]) return; /* a job without pieces: no values to compare */
    dmax = fmax(dmax, s->hi[i] - s->lo[i]);
    f[i] = pair_value(s, i, p[i]);
    if (!isfinite(f[i])) return;
    obj += f[i];
  }
  for (int round = 0; round < ROUNDS && dmax > 0; round++) {
    struct pair_move mv = {.gain = 0, .to = SIZE_MAX};
    for (int k = 0; k < STEPS; k++)
      best_of_amount(s, p, f, ldexp(dmax, -k), &mv);
    if (mv.to == SIZE_MAX || !(mv.gain > PFLEX__FLAT_PAIR_TOL * fabs(obj))) break;
    p[mv.to] += mv.amount, p[mv.from] -= mv.amount;
    double ft = pair_value(s, mv.to, p[mv.to]), ff = pair_value(s, mv.from, p[mv.from]);
    obj += ft - f[mv.to] + ff - f[mv.from];
    f[mv.to] = ft, f[mv.from] = ff;
  }
}
