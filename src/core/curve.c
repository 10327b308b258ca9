/* Power-throughput curves (include/pflex/curve.h): measured (isotonic repair +
 * Steffen interpolation), parametric (paper.md section 8 physics) and
 * callback curves behind one interface, plus fitting and PFI inversion. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_interp.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_poly.h>
#include <gsl/gsl_roots.h>
#include <gsl/gsl_vector.h>

#include "base/fnv.h"
#include "core/curve_internal.h"
#include "core/steffen.h"
#include "pflex/curve.h"
#include "pflex/error.h"
#include "pflex/gpu_models.h"
#include "pflex/pfi.h"

struct pflex_curve {
  enum pflex_curve_kind kind;
  double p_min, p_max, t_max;
  /* measured */
  size_t n;
  struct pflex_curve_point *pts; /* repaired, sorted by power */
  double *xs, *ys;               /* power and throughput arrays for GSL */
  gsl_interp *interp;            /* NULL when n < 2 */
  double *poly;                  /* Steffen: per interval a, b, c, d of the cubic (steffen_poly) */
  double *block;                 /* one allocation holding xs, poly, ys and pts */
  uint64_t digest;               /* pflex_curve_digest */
  bool have_caps;
  bool linear; /* interpolated linearly */
  /* parametric */
  struct pflex_curve_params par;
  /* callback */
  struct pflex_curve_fn fn;
};

/* ---- parametric family ---------------------------------------------------- */

/* x v(x)^2, the clock-dependent part of dynamic power (v = 1 at the floor). */
static double dyn(const struct pflex_curve_params *q, double x) {
  if (x <= q->knee || q->vratio == 1.0) return x;
  double b = (q->vratio - 1.0) / (1.0 - q->knee), a = 1.0 - b * q->knee;
  double v = a + b * x;
  return x * v * v;
}

static double dyn_deriv(const struct pflex_curve_params *q, double x) {
  if (x < q->knee || q->vratio == 1.0) return 1.0;
  double b = (q->vratio - 1.0) / (1.0 - q->knee), a = 1.0 - b * q->knee;
  double v = a + b * x;
  return v * v + 2.0 * b * x * v;
}

/* Relative power P/P_max at clock x. */
static double par_power_rel(const struct pflex_curve_params *q, double x) {
  return q->idle_frac + (1.0 - q->idle_frac) * dyn(q, x) / (q->vratio * q->vratio);
}

/* Relative throughput T/T_max at clock x. */
static double par_tput_rel(const struct pflex_curve_params *q, double x) {
  if (x <= 0) return 0;
  return 1.0 / (q->c / x + 1.0 - q->c);
}

/* Clock x at relative power prel (inverse of par_power_rel), in [0, 1]. */
static double par_clock(const struct pflex_curve_params *q, double prel) {
  double y = (prel - q->idle_frac) / (1.0 - q->idle_frac) * q->vratio * q->vratio;
  if (y <= 0) return 0;
  if (y >= dyn(q, 1.0)) return 1.0;
  if (y <= q->knee || q->vratio == 1.0) return y;
  /* x (a + b x)^2 = y is a cubic, increasing on [knee, 1] since a + b x >= 1 there. */
  double b = (q->vratio - 1.0) / (1.0 - q->knee), a = 1.0 - b * q->knee;
  double r[3];
  int nr = gsl_poly_solve_cubic(2.0 * a / b, a * a / (b * b), -y / (b * b), &r[0], &r[1], &r[2]);
  double x = q->knee;
  for (int i = 0; i < nr; i++)
    if (r[i] >= q->knee - 1e-9 && r[i] <= 1.0 + 1e-9) x = r[i];
  /* One Newton step polishes the closed-form root. */
  double d = dyn_deriv(q, x);
  if (d > 0) x -= (dyn(q, x) - y) / d;
  if (x < q->knee) x = q->knee;
  if (x > 1.0) x = 1.0;
  return x;
}

static bool params_valid(const struct pflex_curve_params *q) {
  return q->c > 0 && q->c <= 1 && q->knee >= 0 && q->knee < 1 && q->idle_frac >= 0 &&
         q->idle_frac < 1 && q->vratio >= 1 && isfinite(q->vratio);
}

/* ---- construction --------------------------------------------------------- */

/* ---- measured curves: evaluation -------------------------------------------
 *
 * Evaluation is the allocator's and the study's inner loop (millions of calls
 * per run), so measured curves are evaluated by core/steffen.h rather than
 * through gsl_interp_eval (a range check, an indirect call and a search per
 * call): GSL's interpolant bit for bit. GSL's object still serves
 * derivatives. test_curve_eval compares the two on random curves for exact
 * equality. */

/* A measured curve's value at p in interval lo: GSL's formula for its
 * interpolation type. */
static inline double measured_at(const struct pflex_curve *c, size_t lo, double p) {
  const double *xs = c->xs;
  if (c->poly) return pflex__steffen_at(xs, c->poly, lo, p);
  double t = p - xs[lo], dx = xs[lo + 1] - xs[lo];
  return dx > 0.0 ? c->ys[lo] + t / dx * (c->ys[lo + 1] - c->ys[lo]) : c->ys[lo];
}

/* A measured curve with >= 2 points at p in [P_min, P_max]: the interval
 * found as gsl_interp_bsearch finds it (the last i with xs[i] <= p, at most
 * n - 2), then measured_at. */
static size_t measured_interval(const struct pflex_curve *c, double p) {
  return pflex__steffen_interval(c->xs, c->n, p);
}

static double measured_eval(const struct pflex_curve *c, double p) {
  return measured_at(c, measured_interval(c, p), p);
}

/* The digest of everything that decides what c evaluates to (and its caps). */
static void set_digest(struct pflex_curve *c) {
  uint64_t h = PFLEX__FNV1A_INIT;
  h = pflex__fnv1a(h, &c->kind, sizeof c->kind);
  double b[3] = {c->p_min, c->p_max, c->t_max};
  h = pflex__fnv1a(h, b, sizeof b);
  switch (c->kind) {
  case PFLEX_CURVE_MEASURED:
    h = pflex__fnv1a(h, &c->n, sizeof c->n);
    h = pflex__fnv1a(h, &c->linear, sizeof c->linear);
    h = pflex__fnv1a(h, c->pts, c->n * sizeof *c->pts);
    break;
  case PFLEX_CURVE_PARAMETRIC: h = pflex__fnv1a(h, &c->par, sizeof c->par); break;
  case PFLEX_CURVE_CALLBACK: h = pflex__fnv1a(h, &c->fn, sizeof c->fn); break;
  }
  c->digest = h;
}

uint64_t pflex_curve_digest(const struct pflex_curve *c) {
  return c->digest;
}

static struct pflex_curve *curve_alloc(enum pflex_curve_kind kind) {
  struct pflex_curve *c = calloc(1, sizeof *c);
  if (c) c->kind = kind;
  return c;
}

static int cmp_point(const void *a, const void *b) {
  const struct pflex_curve_point *x = a, *y = b;
  return (x->power_w > y->power_w) - (x->power_w < y->power_w);
}

/* Pool-adjacent-violators: the non-decreasing sequence closest to v in least
 * squares (weights w), in place. Blocks are kept as (start, weight, mean). */
static int isotonic(double *v, const double *w, size_t n) {
  double *mean = malloc(n * sizeof *mean), *wt = malloc(n * sizeof *wt);
  size_t *len = malloc(n * sizeof *len);
  if (!mean || !wt || !len) {
    free(mean);
    free(wt);
    free(len);
    return -ENOMEM;
  }
  size_t nb = 0;
  for (size_t i = 0; i < n; i++) {
    mean[nb] = v[i];
    wt[nb] = w ? w[i] : 1.0;
    len[nb] = 1;
    nb++;
    while (nb > 1 && mean[nb - 2] > mean[nb - 1]) {
      double ws = wt[nb - 2] + wt[nb - 1];
      mean[nb - 2] = (mean[nb - 2] * wt[nb - 2] + mean[nb - 1] * wt[nb - 1]) / ws;
      wt[nb - 2] = ws;
      len[nb - 2] += len[nb - 1];
      nb--;
    }
  }
  size_t k = 0;
  for (size_t b = 0; b < nb; b++)
    for (size_t j = 0; j < len[b]; j++)
      v[k++] = mean[b];
  free(mean);
  free(wt);
  free(len);
  return 0;
}

/* Sorted points of equal power cannot be interpolated between: averages
 * them in place, w[i] the number of points merged point i stands for (its
 * weight in the isotonic fit). Returns the number of points left. */
static size_t merge_equal_powers(struct pflex_curve_point *p, size_t n, double *w) {
  size_t m = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    double t = 0, cap = 0;
    while (j < n && p[j].power_w == p[i].power_w) {
      t += p[j].tput;
      cap += p[j].cap_w;
      j++;
    }
    p[m] = (struct pflex_curve_point){p[i].power_w, t / (double)(j - i), cap / (double)(j - i)};
    w[m] = (double)(j - i);
    m++;
    i = j;
  }
  return m;
}

/* Makes throughput (weighted by w) and, when every point has one, the cap
 * non-decreasing in power (tmp: m entries of scratch). */
static int make_monotone(struct pflex_curve_point *p, size_t m, const double *w, double *tmp,
                         bool *ret_have_caps) {
  for (size_t i = 0; i < m; i++)
    tmp[i] = p[i].tput;
  int err = isotonic(tmp, w, m);
  if (err) return err;
  for (size_t i = 0; i < m; i++)
    p[i].tput = tmp[i];
  *ret_have_caps = true;
  for (size_t i = 0; i < m; i++) {
    tmp[i] = p[i].cap_w;
    if (!(p[i].cap_w > 0)) *ret_have_caps = false;
  }
  if (!*ret_have_caps) return 0;
  if ((err = isotonic(tmp, NULL, m))) return err;
  for (size_t i = 0; i < m; i++)
    p[i].cap_w = tmp[i];
  return 0;
}

/* The curve's storage and interpolant for its m sorted, monotone points p:
 * one block for what evaluation reads, in the order it reads it (xs, the
 * cubics, ys), then the points, so that a curve costs fewer cache misses when
 * there are a million of them. Steffen (monotone) unless linear is asked for
 * or there are only two points. */
static int build_interp(struct pflex_curve *c, const struct pflex_curve_point *p, size_t m,
                        enum pflex_curve_interp interp) {
  bool steffen = m >= 3 && interp != PFLEX_INTERP_LINEAR;
  size_t npoly = steffen ? 4 * (m - 1) : 0;
  double *block = malloc((2 * m + npoly) * sizeof *block + m * sizeof *c->pts);
  if (!block) return -ENOMEM;
  c->block = block;
  c->xs = block;
  c->poly = steffen ? block + m : NULL;
  c->ys = block + m + npoly;
  c->pts = (struct pflex_curve_point *)(c->ys + m);
  memcpy(c->pts, p, m * sizeof *p);
  c->n = m;
  c->p_min = c->pts[0].power_w;
  c->p_max = c->pts[m - 1].power_w;
  c->t_max = c->pts[m - 1].tput;
  for (size_t i = 0; i < m; i++) {
    c->xs[i] = c->pts[i].power_w;
    c->ys[i] = c->pts[i].tput;
  }
  if (m < 2) return 0;
  c->linear = !steffen;
  c->interp = gsl_interp_alloc(steffen ? gsl_interp_steffen : gsl_interp_linear, m);
  if (!c->interp) return -ENOMEM;
  if (gsl_interp_init(c->interp, c->xs, c->ys, m) != GSL_SUCCESS) return -EINVAL;
  if (steffen) pflex__steffen_poly(c->xs, c->ys, m, c->poly);
  return 0;
}

bool pflex__curve_interval_cubic(const struct pflex_curve *c, size_t i, double q[4]) {
  if (c->kind != PFLEX_CURVE_MEASURED || !c->interp || i + 1 >= c->n) return false;
  if (c->poly) {
    const double *a = &c->poly[4 * i]; /* a, b, c, d: d + t (c + t (b + t a)) */
    q[0] = a[3], q[1] = a[2], q[2] = a[1], q[3] = a[0];
  } else {
    double dx = c->xs[i + 1] - c->xs[i];
    q[0] = c->ys[i], q[1] = dx > 0 ? (c->ys[i + 1] - c->ys[i]) / dx : 0, q[2] = q[3] = 0;
  }
  return true;
}

int pflex_curve_new_measured(const struct pflex_curve_point *points, size_t n,
                             enum pflex_curve_interp interp, struct pflex_curve **ret_curve) {
  if (!points || n == 0) return -EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!(points[i].power_w > 0) || !(points[i].tput > 0) || !isfinite(points[i].power_w) ||
        !isfinite(points[i].tput) || !(points[i].cap_w >= 0) || !isfinite(points[i].cap_w))
      return -EINVAL;
  struct pflex_curve *c = curve_alloc(PFLEX_CURVE_MEASURED);
  struct pflex_curve_point *p = malloc(n * sizeof *p);
  double *w = calloc(n, sizeof *w), *tmp = calloc(n, sizeof *tmp);
  int err = -ENOMEM;
  if (c && p && w && tmp) {
    memcpy(p, points, n * sizeof *p);
    qsort(p, n, sizeof *p, cmp_point);
    size_t m = merge_equal_powers(p, n, w);
    err = make_monotone(p, m, w, tmp, &c->have_caps);
    if (!err) err = build_interp(c, p, m, interp);
  }
  free(p);
  free(w);
  free(tmp);
  if (err) {
    pflex_curve_free(c);
    return err;
  }
  set_digest(c);
  *ret_curve = c;
  return 0;
}

int pflex_curve_new_parametric(const struct pflex_curve_params *params, double p_min, double p_max,
                               double t_max, struct pflex_curve **ret_curve) {
  if (!params || !params_valid(params) || !(p_min > 0) || !(p_max >= p_min) || !(t_max > 0) ||
      !isfinite(p_max) || !isfinite(t_max))
    return -EINVAL;
  struct pflex_curve *c = curve_alloc(PFLEX_CURVE_PARAMETRIC);
  if (!c) return -ENOMEM;
  c->par = *params;
  c->p_min = p_min;
  c->p_max = p_max;
  c->t_max = t_max;
  set_digest(c);
  *ret_curve = c;
  return 0;
}

int pflex_curve_new_callback(const struct pflex_curve_fn *fn, double p_min, double p_max,
                             struct pflex_curve **ret_curve) {
  if (!fn || !fn->eval || !(p_min > 0) || !(p_max >= p_min) || !isfinite(p_max)) return -EINVAL;
  struct pflex_curve *c = curve_alloc(PFLEX_CURVE_CALLBACK);
  if (!c) return -ENOMEM;
  c->fn = *fn;
  c->p_min = p_min;
  c->p_max = p_max;
  c->t_max = fn->eval(fn->ctx, p_max);
  set_digest(c);
  *ret_curve = c;
  return 0;
}

void pflex_curve_free(struct pflex_curve *curve) {
  if (!curve) return;
  if (curve->interp) gsl_interp_free(curve->interp);
  free(curve->block); /* xs, poly, ys and pts */
  free(curve);
}

/* ---- evaluation ----------------------------------------------------------- */

enum pflex_curve_kind pflex_curve_kind(const struct pflex_curve *curve) {
  return curve->kind;
}
double pflex_curve_p_min(const struct pflex_curve *curve) {
  return curve->p_min;
}
double pflex_curve_p_max(const struct pflex_curve *curve) {
  return curve->p_max;
}
double pflex_curve_t_max(const struct pflex_curve *curve) {
  return curve->t_max;
}

bool pflex_curve_piecewise_linear(const struct pflex_curve *c) {
  return c->kind == PFLEX_CURVE_MEASURED && (!c->interp || c->linear);
}

static double clamp(double v, double lo, double hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

double pflex_curve_eval(const struct pflex_curve *c, double p) {
  p = clamp(p, c->p_min, c->p_max);
  switch (c->kind) {
  case PFLEX_CURVE_MEASURED:
    if (!c->interp) return c->pts[0].tput;
    return measured_eval(c, p);
  case PFLEX_CURVE_PARAMETRIC:
    return c->t_max * par_tput_rel(&c->par, par_clock(&c->par, p / c->p_max));
  case PFLEX_CURVE_CALLBACK: return c->fn.eval(c->fn.ctx, p);
  }
  return NAN;
}

/* pflex_curve_eval for a run of powers: the interval search walks on from
 * the previous power's interval (*lo) while the powers do not fall, and
 * starts over when they do; it finds the same interval as the binary
 * search (the last i with xs[i] <= p, at most n - 2), so the same bits. */
static double eval_from(const struct pflex_curve *c, double p, size_t *lo) {
  if (c->kind != PFLEX_CURVE_MEASURED || !c->interp) return pflex_curve_eval(c, p);
  p = clamp(p, c->p_min, c->p_max);
  size_t i = *lo;
  if (!(c->xs[i] <= p)) i = 0;
  while (i + 2 < c->n && c->xs[i + 1] <= p)
    i++;
  *lo = i;
  return measured_at(c, i, p);
}

void pflex_curve_eval_sorted(const struct pflex_curve *c, const double *p, size_t n,
                             double *ret_t) {
  if (n == 0) return;
  if (c->kind != PFLEX_CURVE_MEASURED || !c->interp) {
    for (size_t m = 0; m < n; m++)
      ret_t[m] = pflex_curve_eval(c, p[m]);
    return;
  }
  /* The first interval by the binary search, the others by walking on
   * (the powers do not fall). */
  const double *xs = c->xs;
  size_t i = measured_interval(c, clamp(p[0], c->p_min, c->p_max)), last = c->n - 2;
  for (size_t m = 0; m < n; m++) {
    double x = clamp(p[m], c->p_min, c->p_max);
    while (i < last && xs[i + 1] <= x)
      i++;
    ret_t[m] = measured_at(c, i, x);
  }
}

int pflex_curve_sample(const struct pflex_curve *c, double lo, double hi, size_t k, double *ret_p,
                       double *ret_t) {
  if (k < 2 || !(lo <= hi)) return -EINVAL;
  lo = clamp(lo, c->p_min, c->p_max);
  hi = clamp(hi, c->p_min, c->p_max);
  if (c->kind == PFLEX_CURVE_PARAMETRIC) {
    const struct pflex_curve_params *q = &c->par;
    double xl = par_clock(q, lo / c->p_max), xh = par_clock(q, hi / c->p_max);
    for (size_t m = 0; m < k; m++) {
      double x = xl + (xh - xl) * (double)m / (double)(k - 1);
      ret_p[m] = clamp(c->p_max * par_power_rel(q, x), lo, hi);
      ret_t[m] = c->t_max * par_tput_rel(q, x);
    }
    /* The ends exactly, whatever rounding did to the clock round trip. */
    ret_p[0] = lo;
    ret_p[k - 1] = hi;
    ret_t[0] = pflex_curve_eval(c, lo);
    ret_t[k - 1] = pflex_curve_eval(c, hi);
    return 0;
  }
  for (size_t m = 0; m < k; m++) {
    ret_p[m] = m + 1 == k ? hi : lo + (hi - lo) * (double)m / (double)(k - 1);
    ret_t[m] = pflex_curve_eval(c, ret_p[m]);
  }
  return 0;
}

double pflex_curve_deriv(const struct pflex_curve *c, double p) {
  if (p < c->p_min || p >= c->p_max || c->p_max == c->p_min) return 0;
  switch (c->kind) {
  case PFLEX_CURVE_MEASURED:
    if (!c->interp) return 0;
    return gsl_interp_eval_deriv(c->interp, c->xs, c->ys, p, NULL);
  case PFLEX_CURVE_PARAMETRIC: {
    const struct pflex_curve_params *q = &c->par;
    double x = par_clock(q, p / c->p_max);
    if (x <= 0) return 0;
    double tau = q->c / x + 1.0 - q->c;
    double dt_dx = c->t_max * q->c / (x * x * tau * tau);
    double dp_dx = c->p_max * (1.0 - q->idle_frac) * dyn_deriv(q, x) / (q->vratio * q->vratio);
    return dt_dx / dp_dx;
  }
  case PFLEX_CURVE_CALLBACK: {
    if (c->fn.deriv) return c->fn.deriv(c->fn.ctx, p);
    double h = 1e-6 * (c->p_max - c->p_min);
    double lo = p - h < c->p_min ? c->p_min : p - h, hi = p + h > c->p_max ? c->p_max : p + h;
    return (c->fn.eval(c->fn.ctx, hi) - c->fn.eval(c->fn.ctx, lo)) / (hi - lo);
  }
  }
  return NAN;
}

/* The least p in [lo, hi] with eval(p) >= t, for a non-decreasing curve with
 * eval(lo) < t <= eval(hi); bisection, to a relative 1e-12 of the range. */
static double bisect(const struct pflex_curve *c, double t, double lo, double hi) {
  for (int i = 0; i < 200 && hi - lo > 1e-12 * (c->p_max > 1 ? c->p_max : 1); i++) {
    double mid = 0.5 * (lo + hi);
    if (pflex_curve_eval(c, mid) >= t)
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

int pflex_curve_inverse(const struct pflex_curve *c, double t, double *ret_power_w) {
  if (isnan(t)) return -EINVAL;
  double tmax = pflex_curve_eval(c, c->p_max);
  if (t > tmax * (1 + 1e-12)) return -ERANGE;
  if (t <= pflex_curve_eval(c, c->p_min)) {
    *ret_power_w = c->p_min;
    return 0;
  }
  if (t >= tmax) t = tmax;
  double p;
  switch (c->kind) {
  case PFLEX_CURVE_PARAMETRIC: {
    double tau = c->t_max / t;
    double x = c->par.c / (tau - 1.0 + c->par.c);
    p = clamp(c->p_max * par_power_rel(&c->par, x), c->p_min, c->p_max);
    break;
  }
  case PFLEX_CURVE_MEASURED: {
    /* The first knot reaching t bounds the segment holding the answer. */
    size_t j = 1;
    while (j < c->n - 1 && c->ys[j] < t)
      j++;
    p = bisect(c, t, c->xs[j - 1], c->xs[j]);
    break;
  }
  default: p = bisect(c, t, c->p_min, c->p_max);
  }
  *ret_power_w = p;
  return 0;
}

int pflex_curve_get_params(const struct pflex_curve *c, struct pflex_curve_params *ret) {
  if (c->kind != PFLEX_CURVE_PARAMETRIC) return -EINVAL;
  *ret = c->par;
  return 0;
}

const struct pflex_curve_point *pflex_curve_points(const struct pflex_curve *c, size_t *ret_n) {
  if (c->kind != PFLEX_CURVE_MEASURED) {
    if (ret_n) *ret_n = 0;
    return NULL;
  }
  if (ret_n) *ret_n = c->n;
  return c->pts;
}

double pflex_curve_cap_for_power(const struct pflex_curve *c, double p, int gpus, double cap_min,
                                 double cap_max) {
  double cap;
  p = clamp(p, c->p_min, c->p_max);
  if (c->kind == PFLEX_CURVE_MEASURED && c->have_caps) {
    if (c->n == 1) {
      cap = c->pts[0].cap_w;
    } else {
      size_t j = 1;
      while (j < c->n - 1 && c->xs[j] < p)
        j++;
      double f = (p - c->xs[j - 1]) / (c->xs[j] - c->xs[j - 1]);
      cap = c->pts[j - 1].cap_w + f * (c->pts[j].cap_w - c->pts[j - 1].cap_w);
    }
  } else if (p >= c->p_max) {
    cap = cap_max;
  } else {
    cap = p / (gpus > 0 ? gpus : 1);
  }
  return clamp(cap, cap_min, cap_max);
}

int pflex_curve_pfi(const struct pflex_curve *c, const double *grid, size_t n, double *ret_pfi) {
  double sum = 0, tmax = pflex_curve_eval(c, c->p_max);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(grid[i] < c->p_max)) continue;
    double v;
    double t = pflex_curve_eval(c, grid[i]);
    if (pflex_pfi_index(grid[i], t, c->p_max, tmax, &v) != 0) continue;
    sum += v;
    k++;
  }
  if (k == 0) return -PFLEX_E_NOPOINTS;
  *ret_pfi = sum / (double)k;
  return 0;
}

double pflex_curve_family_tput(const struct pflex_curve_params *q, double p_rel) {
  return par_tput_rel(q, par_clock(q, clamp(p_rel, 0.0, 1.0)));
}

double pflex_curve_family_power(const struct pflex_curve_params *q, double x) {
  return par_power_rel(q, clamp(x, 0.0, 1.0));
}

double pflex_curve_family_clock(const struct pflex_curve_params *q, double p_rel) {
  return par_clock(q, clamp(p_rel, 0.0, 1.0));
}

void pflex_curve_params_default(const char *gpu, int gpus, double p_max,
                                struct pflex_curve_params *ret) {
  /* The GPU table's idle power; for a type pflex does not know, the table's
   * typical idle share of the job's top power (an estimate, docs/gpus.md). */
  const struct pflex_gpu_model *m = pflex_gpu_model_find(gpu ? gpu : "H200"); /* NULL: H200 */
  double s = !(p_max > 0) ? 0
             : m          ? (gpus > 0 ? gpus : 1) * m->idle_w / p_max
                          : pflex_gpu_idle_share();
  if (s > 0.9) s = 0.9;
  *ret = (struct pflex_curve_params){.c = 1.0,
                                     .knee = PFLEX_CURVE_DEFAULT_KNEE,
                                     .idle_frac = s,
                                     .vratio = PFLEX_CURVE_DEFAULT_VRATIO};
}

/* ---- fitting --------------------------------------------------------------- */

struct fit_data {
  const struct pflex_curve_point *pts;
  size_t n;
  double p_max, t_max;
  struct pflex_curve_params base;
};

static double logistic(double u) {
  return 1.0 / (1.0 + exp(-u));
}
static double logit(double p) {
  return log(p / (1.0 - p));
}

/* Unconstrained (u, w) -> c in (0, 1), knee in (0, 0.98). */
static void unpack(const gsl_vector *x, const struct fit_data *d, struct pflex_curve_params *q) {
  *q = d->base;
  q->c = logistic(gsl_vector_get(x, 0));
  q->knee = 0.98 * logistic(gsl_vector_get(x, 1));
}

static int fit_f(const gsl_vector *x, void *data, gsl_vector *f) {
  const struct fit_data *d = data;
  struct pflex_curve_params q;
  unpack(x, d, &q);
  for (size_t i = 0; i < d->n; i++) {
    double prel = d->pts[i].power_w / d->p_max;
    double model = par_tput_rel(&q, par_clock(&q, prel > 1 ? 1 : prel));
    gsl_vector_set(f, i, model - d->pts[i].tput / d->t_max);
  }
  return GSL_SUCCESS;
}

int pflex_curve_fit(const struct pflex_curve_point *points, size_t n,
                    struct pflex_curve_params *params, double *ret_rmse,
                    struct pflex_curve **ret_curve) {
  if (!points || !params) return -EINVAL;
  if (n < 3) return -PFLEX_E_NOPOINTS;
  struct pflex_curve_params base = *params;
  base.c = 0.5;
  base.knee = 0.5;
  if (!params_valid(&base)) return -EINVAL;
  struct fit_data d = {.pts = points, .n = n, .base = base};
  double p_min = INFINITY;
  for (size_t i = 0; i < n; i++) {
    if (!(points[i].power_w > 0) || !(points[i].tput > 0)) return -EINVAL;
    if (points[i].power_w > d.p_max) {
      d.p_max = points[i].power_w;
      d.t_max = points[i].tput;
    }
    if (points[i].power_w < p_min) p_min = points[i].power_w;
  }
  gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
  gsl_multifit_nlinear_workspace *w =
      gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, n, 2);
  if (!w) return -ENOMEM;
  gsl_multifit_nlinear_fdf fdf = {
      .f = fit_f, .df = NULL, .fvv = NULL, .n = n, .p = 2, .params = &d};
  /* Multi-start over a small grid: the knee makes the cost surface piecewise
   * smooth with shallow local minima. */
  static const double c0[] = {0.2, 0.5, 0.8, 0.97}, k0[] = {0.2, 0.5, 0.8};
  double best = INFINITY;
  struct pflex_curve_params bestq = base;
  for (size_t a = 0; a < sizeof c0 / sizeof c0[0]; a++)
    for (size_t b = 0; b < sizeof k0 / sizeof k0[0]; b++) {
      double x0[2] = {logit(c0[a]), logit(k0[b] / 0.98)};
      gsl_vector_view xv = gsl_vector_view_array(x0, 2);
      if (gsl_multifit_nlinear_init(&xv.vector, &fdf, w) != GSL_SUCCESS) continue;
      int info;
      /* A start the solver gives up on (not merely out of iterations or
       * progress) is skipped: its position is not a fit. */
      int st = gsl_multifit_nlinear_driver(200, 1e-10, 1e-10, 1e-12, NULL, NULL, &info, w);
      if (st != GSL_SUCCESS && st != GSL_EMAXITER && st != GSL_ENOPROG) continue;
      /* Points that do not move the model (a zero Jacobian: GSL reports its
       * rank 0 through the error handler, then carries on) determine no fit. */
      if (gsl_matrix_isnull(gsl_multifit_nlinear_jac(w))) continue;
      gsl_vector *fres = gsl_multifit_nlinear_residual(w);
      double ss = 0;
      for (size_t i = 0; i < n; i++)
        ss += gsl_vector_get(fres, i) * gsl_vector_get(fres, i);
      if (isfinite(ss) && ss < best) {
        best = ss;
        unpack(gsl_multifit_nlinear_position(w), &d, &bestq);
      }
    }
  gsl_multifit_nlinear_free(w);
  if (!isfinite(best)) return -PFLEX_E_DATA;
  if (ret_curve) {
    int err = pflex_curve_new_parametric(&bestq, p_min, d.p_max, d.t_max, ret_curve);
    if (err) return err;
  }
  *params = bestq;
  if (ret_rmse) *ret_rmse = sqrt(best / (double)n);
  return 0;
}

/* ---- from a PFI -------------------------------------------------------------- */

struct pfi_path {
  struct pflex_curve_params q;
  double p_min, p_max;
  const double *grid;
  size_t n;
  double target;
  int which; /* 0: vary c, 1: vary vratio */
};

static double path_pfi(double v, void *data) {
  struct pfi_path *pp = data;
  struct pflex_curve_params q = pp->q;
  if (pp->which == 0)
    q.c = v;
  else
    q.vratio = v;
  double sum = 0;
  size_t k = 0;
  for (size_t i = 0; i < pp->n; i++) {
    if (!(pp->grid[i] < pp->p_max)) continue;
    /* Clamped like pflex_curve_eval, so that the curve reproduces the PFI. */
    double prel = clamp(pp->grid[i], pp->p_min, pp->p_max) / pp->p_max;
    double t = par_tput_rel(&q, par_clock(&q, prel));
    if (!(t < 1)) continue;
    sum += (1 - pp->grid[i] / pp->p_max) / (1 - t);
    k++;
  }
  return (k ? sum / (double)k : NAN) - pp->target;
}

static int solve(struct pfi_path *pp, double lo, double hi, double *ret) {
  gsl_function F = {.function = path_pfi, .params = pp};
  gsl_root_fsolver *s = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
  if (!s) return -ENOMEM;
  int err = gsl_root_fsolver_set(s, &F, lo, hi) == GSL_SUCCESS ? 0 : -ERANGE;
  for (int it = 0; !err && it < 200; it++) {
    if (gsl_root_fsolver_iterate(s) != GSL_SUCCESS) {
      err = -ERANGE;
      break;
    }
    double a = gsl_root_fsolver_x_lower(s), b = gsl_root_fsolver_x_upper(s);
    if (gsl_root_test_interval(a, b, 1e-13, 1e-12) == GSL_SUCCESS) break;
  }
  if (!err) *ret = gsl_root_fsolver_root(s);
  gsl_root_fsolver_free(s);
  return err;
}

int pflex_curve_from_pfi(double pfi, double p_min, double p_max, double t_max, const double *grid,
                         size_t n, const struct pflex_curve_params *params,
                         struct pflex_curve **ret_curve) {
  if (!params || !grid || !isfinite(pfi) || !(p_max > 0)) return -EINVAL;
  if (!(p_min > 0) || !(p_min <= p_max)) return -EINVAL;
  struct pfi_path pp = {
      .q = *params, .p_min = p_min, .p_max = p_max, .grid = grid, .n = n, .target = pfi};
  pp.q.c = 1.0;
  if (!params_valid(&pp.q)) return -EINVAL;
  double at_c1 = path_pfi(1.0, &pp);
  if (isnan(at_c1)) return -PFLEX_E_NOPOINTS;
  struct pflex_curve_params q = pp.q;
  int err;
  if (at_c1 <= 0) {
    /* PFI reachable by a less compute-bound job: solve for c. As c -> 0 the
     * throughput stops depending on power and PFI grows without bound. */
    const double c_lo = 1e-6;
    if (path_pfi(c_lo, &pp) < 0) return -ERANGE;
    if (at_c1 == 0) {
      q.c = 1.0;
    } else if ((err = solve(&pp, c_lo, 1.0, &q.c))) {
      return err;
    }
  } else {
    pp.which = 1;
    if (path_pfi(1.0, &pp) > 0) return -ERANGE;
    if ((err = solve(&pp, 1.0, params->vratio, &q.vratio))) return err;
  }
  return pflex_curve_new_parametric(&q, p_min, p_max, t_max, ret_curve);
}

/* ---- from a PFI, shaped by other jobs' curves ---------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Relative throughput of a template at relative power p (power / its P_max):
 * below its P_min, extended linearly with the secant over the next 5% of
 * P_max (a job capped lower keeps losing throughput at about the same rate),
 * floored at 0. The secant's ends are read once per template (r0 NAN until
 * then), not at every point below P_min; lo is eval_from's interval. */
struct tmpl_view {
  const struct pflex_curve *c;
  double pm, r0, r1;
  size_t lo;
};

static struct tmpl_view tmpl_view(const struct pflex_curve *c) {
  return (struct tmpl_view){c, c->p_min / c->p_max, NAN, NAN, 0};
}

static double tmpl_rel(struct tmpl_view *v, double p) {
  const struct pflex_curve *c = v->c;
  if (p >= v->pm) return eval_from(c, p * c->p_max, &v->lo) / c->t_max;
  double h = 0.05;
  if (isnan(v->r0)) {
    v->r0 = pflex_curve_eval(c, c->p_min) / c->t_max;
    v->r1 = pflex_curve_eval(c, (v->pm + h) * c->p_max) / c->t_max;
  }
  double r = v->r0 - (v->r1 - v->r0) / h * (v->pm - p);
  return r > 0 ? r : 0;
}

/* The PFI grid in relative power as Eq. 1 sees it: power from the grid (gp),
 * throughput read at the grid point clamped to [P_min, P_max] (ge); only
 * the capped points (below P_max), at most 16. */
struct rel_grid {
  double gp[16], ge[16];
  size_t n;
};

static void relative_grid(const double *grid, size_t n, double p_min, double p_max,
                          struct rel_grid *g) {
  g->n = 0;
  for (size_t i = 0; i < n && g->n < 16; i++) {
    if (!(grid[i] < p_max)) continue;
    g->gp[g->n] = grid[i] / p_max;
    g->ge[g->n] = clamp(grid[i], p_min, p_max) / p_max;
    g->n++;
  }
}

/* Eq. 1 on the grid for a throughput deficit (1 - T/T_max) at each grid
 * point: the mean PFI_i over the points that lose throughput; NAN when none. */
static double grid_pfi(const struct rel_grid *g, const double *deficit) {
  double s = 0;
  size_t k = 0;
  for (size_t i = 0; i < g->n; i++)
    if (deficit[i] > 0) {
      s += (1 - g->gp[i]) / deficit[i];
      k++;
    }
  return k ? s / (double)k : NAN;
}

/* The curve's knots: K uniform in power from P_min to P_max, plus the grid
 * points inside, so that the curve holds the averaged deficit exactly where
 * Eq. 1 reads it. In watts by the same formula as the optimizer's uniform
 * knots (alloc.c), so that the two coincide and it need not sample both. */
static size_t curve_knots(double p_min, double p_max, const double *grid, size_t n, double *knots) {
  enum { K = PFLEX_CURVE_TEMPLATE_POINTS };
  size_t np = 0;
  for (size_t m = 0; m < K; m++)
    knots[np++] = m + 1 == K ? p_max : p_min + (p_max - p_min) * (double)m / (K - 1);
  for (size_t i = 0; i < n && np < K + 16; i++)
    if (grid[i] > p_min && grid[i] < p_max) knots[np++] = grid[i];
  qsort(knots, np, sizeof *knots, cmp_double);
  return np;
}

/* Every template's deficit at the knots (row[0 .. np)) then at the grid
 * points (row[np .. np + g.n)), one row of `stride` per template, and its
 * PFI on the grid (pi, NAN when it loses nothing there). */
struct pflex_curve_templates {
  double p_min, p_max, t_max;
  double *grid; /* as given, for pflex_curve_templates_match */
  size_t ngrid;
  struct rel_grid g;
  double knots[PFLEX_CURVE_TEMPLATE_POINTS + 16];
  size_t np, nt, stride;
  size_t same[16]; /* per grid point: the knot of the same relative power, or SIZE_MAX */
  double *pi, *def;
};

void pflex_curve_templates_free(struct pflex_curve_templates *t) {
  if (!t) return;
  free(t->grid);
  free(t->pi);
  free(t->def);
  free(t);
}

size_t pflex_curve_templates_count(const struct pflex_curve_templates *t) {
  return t ? t->nt : 0;
}

bool pflex_curve_templates_match(const struct pflex_curve_templates *t, double p_min, double p_max,
                                 double t_max, const double *grid_w, size_t n) {
  return t && t->p_min == p_min && t->p_max == p_max && t->t_max == t_max && t->ngrid == n &&
         (n == 0 || memcmp(t->grid, grid_w, n * sizeof *grid_w) == 0);
}

/* Which knot each grid point reads the same relative power as (t->same):
 * a grid point inside (P_min, P_max) is a knot, one at or below P_min reads
 * P_min, knot 0. tmpl_rel is a function of the power alone, so such a grid
 * point's deficit is copied from its knot's: the same bits, a fifth fewer
 * evaluations. Found by comparing the doubles, not assumed. */
static void grid_same_knots(struct pflex_curve_templates *t) {
  for (size_t i = 0; i < t->g.n; i++) {
    t->same[i] = SIZE_MAX;
    for (size_t m = 0; m < t->np && t->same[i] == SIZE_MAX; m++)
      if (t->knots[m] / t->p_max == t->g.ge[i]) t->same[i] = m;
  }
}

/* Template c's row: its deficit at the knots, then on the grid. */
static void template_row(const struct pflex_curve_templates *t, const struct pflex_curve *c,
                         double *row) {
  struct tmpl_view v = tmpl_view(c);
  for (size_t m = 0; m < t->np; m++)
    row[m] = 1 - tmpl_rel(&v, t->knots[m] / t->p_max);
  for (size_t i = 0; i < t->g.n; i++)
    row[t->np + i] = t->same[i] != SIZE_MAX ? row[t->same[i]] : 1 - tmpl_rel(&v, t->g.ge[i]);
}

int pflex_curve_templates_new(double p_min, double p_max, double t_max, const double *grid_w,
                              size_t n, const struct pflex_curve *const *tmpl, size_t nt,
                              struct pflex_curve_templates **ret) {
  if (!ret || !grid_w || !tmpl || nt == 0 || !(p_min > 0) || !(p_max >= p_min) ||
      !isfinite(p_max) || !(t_max > 0) || !isfinite(t_max))
    return -EINVAL;
  struct rel_grid g;
  relative_grid(grid_w, n, p_min, p_max, &g);
  if (g.n == 0) return -PFLEX_E_NOPOINTS;
  for (size_t j = 0; j < nt; j++)
    if (!tmpl[j] || !(tmpl[j]->t_max > 0) || !(tmpl[j]->p_max > 0)) return -EINVAL;
  struct pflex_curve_templates *t = calloc(1, sizeof *t);
  if (!t) return -ENOMEM;
  *t = (struct pflex_curve_templates){.p_min = p_min, .p_max = p_max, .t_max = t_max,
                                      .ngrid = n, .g = g, .nt = nt};
  t->np = curve_knots(p_min, p_max, grid_w, n, t->knots);
  t->stride = t->np + g.n;
  grid_same_knots(t);
  t->grid = malloc(n * sizeof *t->grid);
  t->pi = malloc(nt * sizeof *t->pi);
  t->def = malloc(nt * t->stride * sizeof *t->def);
  if (!t->grid || !t->pi || !t->def) {
    pflex_curve_templates_free(t);
    return -ENOMEM;
  }
  memcpy(t->grid, grid_w, n * sizeof *grid_w);
  for (size_t j = 0; j < nt; j++) {
    double *row = t->def + j * t->stride;
    template_row(t, tmpl[j], row);
    t->pi[j] = grid_pfi(&t->g, row + t->np);
  }
  *ret = t;
  return 0;
}

/* Gaussian kernel weights of the templates used by how far their PFI on the
 * grid lies from pfi (in bandwidths), relative to the nearest one so that
 * they cannot all underflow however far the PFI lies from every template;
 * 0 for those not used. -ERANGE when no template used has a PFI. */
static int template_weights(const struct pflex_curve_templates *t, double pfi,
                            const unsigned char *use, double bandwidth, double *w,
                            double *ret_wsum) {
  double dmin = INFINITY;
  for (size_t j = 0; j < t->nt; j++) {
    bool on = !use || use[j];
    w[j] = !on || isnan(t->pi[j]) ? INFINITY : (t->pi[j] - pfi) / bandwidth; /* the distance */
    if (fabs(w[j]) < dmin) dmin = fabs(w[j]);
  }
  if (!isfinite(dmin)) return -ERANGE;
  *ret_wsum = 0;
  for (size_t j = 0; j < t->nt; j++) {
    w[j] = isfinite(w[j]) ? exp(-0.5 * (w[j] * w[j] - dmin * dmin)) : 0;
    *ret_wsum += w[j];
  }
  return 0;
}

/* def[m] = sum over the templates j in order of w[j] / wsum times their
 * deficit at point m (those of weight 0 left out): four points at a time,
 * each summed in registers over the templates in the same order as one
 * point at a time would, so the same bits with a quarter of the loads and
 * stores of the sums. w is overwritten with the factors w[j] / wsum, ix
 * (nt) with their templates. */
static void weighted_rows(const struct pflex_curve_templates *t, double *w, double wsum,
                          size_t *ix, double *def) {
  size_t nz = 0, st = t->stride, m = 0;
  for (size_t j = 0; j < t->nt; j++)
    if (w[j] != 0) w[nz] = w[j] / wsum, ix[nz++] = j;
  for (; m + 4 <= st; m += 4) {
    double a = 0, b = 0, c = 0, d = 0;
    for (size_t k = 0; k < nz; k++) {
      const double *row = t->def + ix[k] * st + m;
      a += w[k] * row[0], b += w[k] * row[1], c += w[k] * row[2], d += w[k] * row[3];
    }
    def[m] = a, def[m + 1] = b, def[m + 2] = c, def[m + 3] = d;
  }
  for (; m < st; m++)
    for (size_t k = 0; k < nz; k++)
      def[m] += w[k] * t->def[ix[k] * st + m];
}

int pflex_curve_from_templates(const struct pflex_curve_templates *t, double pfi,
                               const unsigned char *use, double bandwidth,
                               struct pflex_curve **ret_curve) {
  enum { K = PFLEX_CURVE_TEMPLATE_POINTS };
  if (!t || !ret_curve || !(pfi > 0) || !isfinite(pfi) || !(bandwidth > 0)) return -EINVAL;
  double *w = malloc(t->nt * sizeof *w), wsum = 0;
  size_t *ix = malloc(t->nt * sizeof *ix);
  int err = w && ix ? template_weights(t, pfi, use, bandwidth, w, &wsum) : -ENOMEM;
  /* The weighted mean deficit of the templates at the knots and on the grid. */
  double def[K + 32] = {0};
  if (!err) weighted_rows(t, w, wsum, ix, def);
  free(w);
  free(ix);
  if (err) return err;
  /* Scaling the deficit by lambda divides every PFI_i by lambda. */
  double mean = grid_pfi(&t->g, def + t->np);
  if (isnan(mean)) return -ERANGE;
  double lambda = mean / pfi;
  struct pflex_curve_point pts[K + 16];
  size_t np = t->np;
  for (size_t m = 0; m < np; m++) {
    double v = 1 - lambda * (def[m] > 0 ? def[m] : 0);
    if (v < 1e-3) v = 1e-3;
    pts[m] = (struct pflex_curve_point){t->knots[m], v * t->t_max, 0};
  }
  pts[np - 1].power_w = t->p_max;
  pts[np - 1].tput = t->t_max;
  return pflex_curve_new_measured(pts, t->p_max > t->p_min ? np : 1, PFLEX_INTERP_STEFFEN,
                                  ret_curve);
}

int pflex_curve_from_pfi_templates(double pfi, double p_min, double p_max, double t_max,
                                   const double *grid, size_t n,
                                   const struct pflex_curve *const *tmpl, size_t nt,
                                   double bandwidth, struct pflex_curve **ret_curve) {
  if (!(pfi > 0) || !isfinite(pfi) || !(bandwidth > 0)) return -EINVAL;
  struct pflex_curve_templates *t = NULL;
  int err = pflex_curve_templates_new(p_min, p_max, t_max, grid, n, tmpl, nt, &t);
  if (!err) err = pflex_curve_from_templates(t, pfi, NULL, bandwidth, ret_curve);
  pflex_curve_templates_free(t);
  return err;
}
