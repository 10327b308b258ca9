/* The exact oracle (PFLEX_ALLOC_ORACLE, include/pflex/alloc.h): maximizes
 * the total weighted throughput on the curves themselves to a certified
 * relative tolerance, by branch and bound on concave majorants.
 *
 * Each job's curve is sampled on its range (ORACLE_INTERVALS intervals plus
 * its measured points). On each sample interval the curve's rise above the
 * chord is bounded by lifting the chord: the excess of the cubic through the
 * interval's ends and its two third-points, which is the curve itself for a
 * measured Steffen curve (a cubic between measured points, and the samples
 * include them) and 0 for a linear one; for parametric and callback curves it
 * is the cubic model of the curve on an interval of 1/512 of its range (error
 * fourth order in the interval). Where that cubic is concave on the
 * interval, the least of its two end tangents and the lifted chord bounds it
 * instead, a quarter as far above it at most, with its one or two corners
 * inside the interval and no lift at the samples (concave_corners): on the
 * concave stretches of a workload's curves, where the sum of 100 jobs' lifts
 * used to exceed the tolerance and most calls branched, the root mostly
 * certifies. The upper concave hull of these points is a concave majorant
 * U_i >= weight_i T_i. (A branch's sub-range still lifts its samples: its
 * bound is valid, only less tight.) Maximizing sum U_i under the
 * target is a continuous knapsack: every segment steeper than a threshold
 * slope, found by a search over the hulls' sorted slopes (logarithmic in
 * their length per hull). Its value bounds the optimum from above; its
 * solution is a feasible allocation whose true value bounds it from below.
 * A node whose bound is within the tolerance of the best allocation found is
 * closed; otherwise the job whose majorant is furthest above its curve at the
 * solution (the one job inside a hull segment, or one at a lifted sample) has
 * its range split there, and each part gets the hull of its own samples. The
 * answer's certified shortfall (bound minus value) is reported as gap_bound.
 *
 * Majorants depend on (curve digest, range, weight, intervals) only and are
 * kept in the caller's pflex_alloc_ctx, so a study or a controller samples
 * each curve once while it stays there (two generations of at most 256 MB);
 * a weight's is the weight-1 majorant scaled, so a curve is sampled once for
 * all weights.
 * A node's threshold search starts at its parent's threshold: the counts of
 * the entries the parent left are reused, and a walk over the slopes beyond
 * it, nearest first, mostly reaches the new one in a few steps. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_internal.h"
#include "pflex/alloc.h"

/* Sample intervals on a job's range (fewer past 1024 jobs: memory linear in jobs). */
#define ORACLE_INTERVALS 512u
/* Branch and bound limits; past them the certified gap says what is left.
 * A node costs time linear in the jobs: fewer nodes for many jobs. */
#define ORACLE_MAX_NODES 4096
#define ORACLE_NODE_WORK (1u << 20)
#define ORACLE_MAX_DEPTH 48
#define NONE SIZE_MAX
/* The cache's bound: when its pool passes this many doubles (256 MB; about
 * 7,000 entries at 512 intervals) or its entries four per job and 65,536, it
 * becomes the older generation, whose entries a later call copies back as it
 * meets them, and the generation before is dropped: at most about twice this,
 * and what the last calls used stays. */
#define ORACLE_CACHE_DOUBLES ((size_t)1 << 25)

/* ---- the cache of sampled, lifted curves ------------------------------------- */

struct okey {
  uint64_t digest;
  double lo, hi, weight;
  unsigned nint;
};

/* In the pool at off: xs[k], ys[k] (weighted), eps[k - 1] (each interval's
 * lift), then the whole range's hull: X[len + 1], S[len], Q[len + 1]. */
struct oentry {
  struct okey key;
  size_t off, k, len;
  double base;
  unsigned long stamp; /* the call that last grouped jobs on it */
  size_t gid;          /* its group in that call */
  bool used;
};

struct pflex__oracle_cache {
  struct oentry *tab;
  size_t nslots, nused;
  double *pool;
  size_t npool, cap;
  unsigned long calls;
  struct pflex__oracle_cache *older; /* the generation before (NULL: none) */
  /* branch-and-bound scratch, kept between calls */
  double *npl;
  size_t ncap;
};

void pflex__oracle_cache_free(struct pflex__oracle_cache *oc) {
  if (!oc) return;
  pflex__oracle_cache_free(oc->older);
  free(oc->tab);
  free(oc->pool);
  free(oc->npl);
  free(oc);
}

static size_t okey_slot(const struct okey *k, size_t nslots) {
  uint64_t h = pflex__alloc_mix(
      pflex__alloc_mix(pflex__alloc_mix(pflex__alloc_mix(k->digest, pflex__alloc_dbits(k->lo)),
                                        pflex__alloc_dbits(k->hi)),
                       pflex__alloc_dbits(k->weight)),
      k->nint);
  return (size_t)(h ^ (h >> 31)) & (nslots - 1);
}

static bool okey_eq(const struct okey *a, const struct okey *b) {
  return a->digest == b->digest && a->lo == b->lo && a->hi == b->hi && a->weight == b->weight &&
         a->nint == b->nint;
}

/* The slot holding key k, or the empty one where it goes. */
static size_t oc_slot(const struct pflex__oracle_cache *oc, const struct okey *k) {
  size_t h = okey_slot(k, oc->nslots);
  while (oc->tab[h].used && !okey_eq(&oc->tab[h].key, k))
    h = (h + 1) & (oc->nslots - 1);
  return h;
}

static int oc_grow(struct pflex__oracle_cache *oc) {
  size_t ns = oc->nslots ? 2 * oc->nslots : 64;
  struct oentry *t = calloc(ns, sizeof *t), *old = oc->tab;
  if (!t) return -ENOMEM;
  size_t on = oc->nslots;
  oc->tab = t;
  oc->nslots = ns;
  for (size_t h = 0; h < on; h++)
    if (old[h].used) oc->tab[oc_slot(oc, &old[h].key)] = old[h];
  free(old);
  return 0;
}

static int oc_reserve(struct pflex__oracle_cache *oc, size_t more) {
  if (oc->npool + more <= oc->cap) return 0;
  size_t nc = oc->cap ? 2 * oc->cap : 4096;
  while (nc < oc->npool + more)
    nc *= 2;
  double *t = realloc(oc->pool, nc * sizeof *t);
  if (!t) return -ENOMEM;
  oc->pool = t;
  oc->cap = nc;
  return 0;
}

/* Makes the entries the older generation and starts an empty one in the
 * buffers of the generation before (dropped): their pages are in use
 * already, and the pool need not grow again by copies. */
static int oc_rotate(struct pflex__oracle_cache *oc) {
  struct pflex__oracle_cache *old = oc->older;
  if (!old && !(old = calloc(1, sizeof *old))) return -ENOMEM;
  struct pflex__oracle_cache drop = *old;
  old->tab = oc->tab;
  old->nslots = oc->nslots;
  old->nused = oc->nused;
  old->pool = oc->pool;
  old->npool = oc->npool;
  old->cap = oc->cap;
  oc->tab = drop.tab;
  oc->nslots = drop.nslots;
  oc->pool = drop.pool;
  oc->cap = drop.cap;
  oc->nused = oc->npool = 0;
  if (oc->tab) memset(oc->tab, 0, oc->nslots * sizeof *oc->tab);
  oc->older = old;
  return 0;
}

/* Copies entry e of generation src (oc itself or its older one) into slot h
 * for key, its weighted values (samples, lifts, hull slopes and values)
 * multiplied by r (1: the same bits). */
static int oc_copy(struct pflex__oracle_cache *oc, const struct pflex__oracle_cache *src,
                   const struct oentry *e, const struct okey *key, size_t h, double r) {
  struct oentry c = *e; /* e may lie in oc's table, and oc's pool move */
  size_t size = 3 * c.k - 1 + 3 * c.len + 2;
  if (oc_reserve(oc, size) < 0) return -ENOMEM;
  double *to = &oc->pool[oc->npool];
  const double *from = &src->pool[c.off];
  if (r == 1) {
    memcpy(to, from, size * sizeof *to);
  } else { /* xs and X as they are, the values scaled on the way: one pass */
    size_t xo = 3 * c.k - 1, so = xo + c.len + 1;
    memcpy(to, from, c.k * sizeof *to);
    for (size_t v = c.k; v < xo; v++) /* ys, eps */
      to[v] = from[v] * r;
    memcpy(to + xo, from + xo, (c.len + 1) * sizeof *to);
    for (size_t v = so; v < size; v++) /* S, Q */
      to[v] = from[v] * r;
  }
  oc->tab[h] = (struct oentry){
      .key = *key, .off = oc->npool, .k = c.k, .len = c.len, .base = r * c.base, .gid = NONE,
      .used = true};
  oc->npool += size;
  oc->nused++;
  return 0;
}

/* ---- sampling ----------------------------------------------------------------- */

/* The cubic model of weight * T on [x0, x1] (ends y0, y1, weighted): its
 * excess over the chord, e(u) = u (u - 1) (A u + B) with u in [0, 1], through
 * the two third-points. */
struct cubic {
  double A, B, e1, e2;
};

/* The model from the curve's values t1, t2 at the two third-points. */
static struct cubic cubic_from(double w, double t1, double t2, double y0, double y1) {
  double dy = y1 - y0;
  double e1 = w * t1 - (y0 + dy / 3);
  double e2 = w * t2 - (y0 + 2 * dy / 3);
  double A = -13.5 * (e2 - e1);
  return (struct cubic){A, -4.5 * e1 - A / 3, e1, e2};
}

static struct cubic cubic_model(const struct pflex_curve *c, double w, double x0, double x1,
                                double y0, double y1) {
  double h = x1 - x0;
  return cubic_from(w, pflex_curve_eval(c, x0 + h / 3), pflex_curve_eval(c, x0 + 2 * h / 3), y0,
                    y1);
}

/* An upper bound on the model's excess over the chord (0 when it has none),
 * with the margin for rounding. */
static double model_excess(const struct cubic *m, double y0, double y1) {
  double A = m->A, B = m->B, best = fmax(0.0, fmax(m->e1, m->e2));
  /* e'(u) = 3 A u^2 + 2 (B - A) u - B */
  double qa = 3 * A, qb = 2 * (B - A), qc = -B, u[2];
  int nu = 0;
  if (fabs(qa) < 1e-300) {
    if (qb != 0) u[nu++] = -qc / qb;
  } else {
    double disc = qb * qb - 4 * qa * qc;
    if (disc >= 0) {
      double r = sqrt(disc);
      u[nu++] = (-qb + r) / (2 * qa);
      u[nu++] = (-qb - r) / (2 * qa);
    }
  }
  for (int k = 0; k < nu; k++)
    if (u[k] > 0 && u[k] < 1) best = fmax(best, u[k] * (u[k] - 1) * (A * u[k] + B));
  return best > 0 ? best * (1 + 1e-9) + 1e-12 * (fabs(y0) + fabs(y1)) : 0;
}

/* An upper bound on how far weight * T rises above its chord on [x0, x1]:
 * the largest excess of its cubic model, plus a margin for rounding. */
static double chord_excess(const struct pflex_curve *c, double w, double x0, double x1, double y0,
                           double y1) {
  if (!(x1 - x0 > 0)) return 0;
  struct cubic m = cubic_model(c, w, x0, x1, y0, y1);
  return model_excess(&m, y0, y1);
}

/* Where the model is concave on the interval (e'' <= 0 at both ends, so
 * e' falls from e'(0) = -B >= 0 to e'(1) = A + B <= 0), it lies under its
 * tangents at both ends as well as under the chord lifted by its excess eps:
 * under the least of the three lines, whose one or two corners inside the
 * interval are written to u[] and v[] (excess over the chord, with the
 * margin). Their number; 0 where the model is not concave. At the ends the
 * least line is the curve itself, so the samples need no lift there: the
 * bound's largest distance above a concave cubic is a quarter of the lifted
 * chord's. */
static int concave_corners(const struct cubic *m, double eps, double y0, double y1, double *u,
                           double *v) {
  double s0 = -m->B, s1 = -(m->A + m->B); /* the tangents' rise: s0 u and s1 (1 - u) */
  bool concave = m->B - m->A <= 0 && 2 * m->A + m->B <= 0 && s0 >= 0 && s1 >= 0;
  if (!concave || !(eps > 0)) return 0;
  double d = eps * 1e-9 + 1e-12 * (fabs(y0) + fabs(y1)); /* for rounding */
  double ul = s0 > eps ? eps / s0 : 1, ur = s1 > eps ? 1 - eps / s1 : 0;
  if (ul < ur) {
    u[0] = ul;
    u[1] = ur;
    v[0] = v[1] = eps + d;
    return 2;
  }
  /* the tangents meet under the lifted chord */
  u[0] = s0 + s1 > 0 ? s1 / (s0 + s1) : 0.5;
  v[0] = s0 * u[0] + d;
  return 1;
}

/* The curve at every interval's two third-points (cubic_model's), in one
 * sorted run of evaluations (the same values): into tv[2 m], tv[2 m + 1]
 * for interval m; tx: room for their powers (2 (k - 1) each). */
static void third_values(const struct pflex_curve *c, const double *xs, size_t k, double *tx,
                         double *tv) {
  for (size_t m = 0; m + 1 < k; m++) {
    double h = xs[m + 1] - xs[m];
    tx[2 * m] = xs[m] + h / 3;
    tx[2 * m + 1] = xs[m] + 2 * h / 3;
  }
  pflex_curve_eval_sorted(c, tx, k > 0 ? 2 * (k - 1) : 0, tv);
}

/* The points whose upper hull bounds the samples xs, ys (k) from above,
 * into hp (room 3 k - 2), and each interval's lift into eps (k - 1): an
 * interval where the model is concave adds its corners (concave_corners)
 * and lifts neither end; any other lifts both ends by its excess. Their
 * number. tw: scratch, 4 (k - 1) doubles. */
static size_t majorant_points(const struct pflex_curve *c, const double *xs, const double *ys,
                              size_t k, double *eps, struct pflex__hullpt *hp, double *tw) {
  bool linear = pflex_curve_piecewise_linear(c);
  double *tv = tw + 2 * (k > 0 ? k - 1 : 0);
  if (!linear) third_values(c, xs, k, tw, tv);
  size_t n = 0;
  double lift = 0; /* the left interval's lift of sample m */
  for (size_t m = 0; m < k; m++) {
    hp[n++] = (struct pflex__hullpt){xs[m], ys[m] + lift};
    if (m + 1 == k) break;
    double x0 = xs[m], h = xs[m + 1] - x0, y0 = ys[m], y1 = ys[m + 1], u[2], v[2];
    int nc = 0;
    eps[m] = 0;
    if (!linear && h > 0) {
      struct cubic cm = cubic_from(1, tv[2 * m], tv[2 * m + 1], y0, y1);
      eps[m] = model_excess(&cm, y0, y1);
      nc = concave_corners(&cm, eps[m], y0, y1, u, v);
      for (int q = 0; q < nc; q++) /* corners strictly inside, in order, or none */
        if (!(x0 + u[q] * h > (q ? x0 + u[0] * h : x0) && x0 + u[q] * h < xs[m + 1])) nc = 0;
    }
    for (int q = 0; q < nc; q++)
      hp[n++] = (struct pflex__hullpt){x0 + u[q] * h, y0 + (y1 - y0) * u[q] + v[q]};
    lift = nc ? 0 : eps[m];
    if (!nc) hp[n - 1].y = fmax(hp[n - 1].y, ys[m] + lift);
  }
  return n;
}

/* The hull of hp[0..nh) (a majorant's vertices) into X, S, Q (room nh each):
 * its segments that gain, and *ret_base its first value. Their number. The
 * slopes fall strictly, as the threshold search's binary searches need: a
 * vertex the hull kept only by rounding (its slopes, divided, not falling)
 * is dropped, and the chord over it stays a majorant. */
static size_t hull_arrays(const struct pflex__hullpt *hp, size_t nh, double *X, double *S,
                          double *Q, double *ret_base) {
  size_t len = 0;
  *ret_base = hp[0].y;
  X[0] = hp[0].x;
  Q[0] = 0;
  for (size_t v = 0; v + 1 < nh; v++) {
    double dp = hp[v + 1].x - hp[v].x, slope = (hp[v + 1].y - hp[v].y) / dp;
    if (!(slope > 0)) break;
    while (len > 0 && !(slope < S[len - 1])) {
      len--;
      slope = (hp[v + 1].y - hp[0].y - Q[len]) / (hp[v + 1].x - X[len]);
    }
    S[len] = slope;
    X[len + 1] = hp[v + 1].x;
    Q[len + 1] = hp[v + 1].y - hp[0].y;
    len++;
  }
  return len;
}

/* Samples curve c (weight 1) on [key->lo, key->hi] into a new cache entry
 * at slot h. */
static int oc_build(struct pflex__oracle_cache *oc, const struct pflex_curve *c,
                    const struct okey *key, size_t h, struct pflex__hullpt *hp) {
  size_t np;
  pflex_curve_points(c, &np);
  size_t room = key->nint + np + 3;
  /* 3 k - 1, and 3 hulls of <= 3 k; past them majorant_points' scratch. */
  if (oc_reserve(oc, 16 * room) < 0) return -ENOMEM;
  double *xs = &oc->pool[oc->npool], *tw = xs + 12 * room;
  size_t k = pflex__alloc_knots(c, key->lo, key->hi, key->nint + 1, xs);
  double *ys = xs + k, *eps = ys + k;
  pflex_curve_eval_sorted(c, xs, k, ys);
  size_t nh = pflex__alloc_upper_hull(hp, majorant_points(c, xs, ys, k, eps, hp, tw));
  double *X = eps + (k > 0 ? k - 1 : 0), base;
  /* X, S, Q need len + 1, len, len + 1 <= nh each: laid out after the fact. */
  double *S = X + nh, *Q = S + nh;
  size_t len = hull_arrays(hp, nh, X, S, Q, &base);
  memmove(X + len + 1, S, len * sizeof *S);
  memmove(X + 2 * len + 1, Q, (len + 1) * sizeof *Q);
  oc->tab[h] = (struct oentry){
      .key = *key, .off = oc->npool, .k = k, .len = len, .base = base, .gid = NONE, .used = true};
  oc->npool += 3 * k - 1 + 3 * len + 2;
  oc->nused++;
  return 0;
}

/* ---- one call's state ----------------------------------------------------------- */

/* A majorant in play: the jobs of ranks [r0, r1) of group g (jobs with the
 * same curve, range and weight, in job order), m = r1 - r0 of them, all on
 * the range [a, b] (the group's, or part of it after branching). */
struct live {
  const double *X, *S, *Q;
  double base, m, a, b;
  size_t g, r0, r1, len;
  size_t cgt, cge; /* segments steeper than cv / at least as steep */
  double cv;       /* the slope they were counted at (NAN: none) */
  double tx, tval; /* weight * T at tx, the last X[cgt] it was needed at (NAN: none) */
};

/* A group's samples, for the branching's sub-ranges. */
struct gsamp {
  const double *xs, *ys, *eps;
  size_t k;
  const struct pflex_alloc_job *job; /* its first job: curve and weight */
};

/* A slope in the walk's heap: segment c of live entry k, key its slope
 * (side +1) or minus it (side -1). */
struct hslope {
  double key;
  size_t k, c;
};

struct orc {
  const struct pflex_alloc_job *jobs;
  size_t n;
  const double *lo, *hi;
  double target, asum, fixed_val;
  size_t *hid, *gof;       /* job's live majorant; its group (NONE: fixed at lo) */
  size_t *rk, *mem, *goff; /* job's rank in its group; group g's jobs mem[goff[g]..goff[g+1]) */
  double *p, *u, *tv, *bestp;
  struct live *lv;
  size_t ng, nlive;
  struct gsamp *gs;
  struct pflex__seg *mids;
  struct hslope *heap; /* the walk's (lp_walk), one per live entry */
  double pgt, pge;     /* the last probe's live_len sums */
  size_t *rl, *rr;
  double best, open;
  double hint; /* the last node's threshold (NAN: none yet) */
  double *npl; /* node pool: the restricted majorants */
  size_t nnpl, cap_npl, kmax;
  struct pflex__hullpt *hp;
  int nodes, max_nodes;
};

static void orc_release(struct orc *o) {
  free(o->hid); /* one block for the index arrays */
  free(o->p);   /* one for the values */
  free(o->lv);
  free(o->gs);
  free(o->mids);
  free(o->heap);
  free(o->hp);
}

/* The per-call arrays: the index ones (hid, gof, rk, mem: one per job; goff
 * one per group and one; rl, rr: one per live entry) in one block, the
 * values (p, u, tv, bestp: one per job) in another. */
static int orc_alloc(struct orc *o, size_t n) {
  size_t m = n ? n : 1, nl = m + 2 * ORACLE_MAX_DEPTH + 2;
  size_t *ix = malloc((5 * m + 1 + 2 * nl) * sizeof *ix);
  double *v = malloc(4 * m * sizeof *v);
  o->hid = ix;
  o->p = v;
  o->lv = malloc(nl * sizeof *o->lv);
  o->gs = malloc(m * sizeof *o->gs);
  o->mids = malloc(nl * sizeof *o->mids);
  o->heap = malloc(nl * sizeof *o->heap);
  if (!ix || !v || !o->lv || !o->gs || !o->mids || !o->heap) return -ENOMEM;
  o->gof = ix + m;
  o->rk = ix + 2 * m;
  o->mem = ix + 3 * m;
  o->goff = ix + 4 * m;
  o->rl = ix + 5 * m + 1;
  o->rr = o->rl + nl;
  o->u = v + m;
  o->tv = v + 2 * m;
  o->bestp = v + 3 * m;
  return 0;
}

/* Room in hp for the majorant points of curve c on nint intervals. */
static int hp_room(struct orc *o, const struct pflex_curve *c, unsigned nint) {
  size_t np;
  pflex_curve_points(c, &np);
  if (3 * (nint + np + 3) <= o->kmax) return 0;
  o->kmax = 3 * (nint + np + 3);
  free(o->hp);
  return (o->hp = malloc(o->kmax * sizeof *o->hp)) ? 0 : -ENOMEM;
}

/* The slot of key in cache oc, its entry made if new: copied from the older
 * generation; sampled, for weight 1; else the weight-1 entry's (made first
 * if new) scaled by the weight. A majorant of T times w is one of w T, and
 * whether cached or not every entry of weight w is the same bits: those of
 * the weight-1 entry times w. So a curve met under two weights (a study's
 * two objectives) is sampled once. */
static int entry_in(struct orc *o, struct pflex__oracle_cache *oc, const struct pflex_curve *c,
                    const struct okey *key, size_t *ret_slot) {
  if (2 * (oc->nused + 2) > oc->nslots && oc_grow(oc) < 0) return -ENOMEM;
  size_t h = *ret_slot = oc_slot(oc, key);
  if (oc->tab[h].used) return 0;
  const struct pflex__oracle_cache *old = oc->older;
  const struct oentry *e = old && old->nused ? &old->tab[oc_slot(old, key)] : NULL;
  if (e && e->used) return oc_copy(oc, old, e, key, h, 1);
  int err;
  if (key->weight == 1) return (err = hp_room(o, c, key->nint)) ? err : oc_build(oc, c, key, h, o->hp);
  struct okey unit = *key;
  unit.weight = 1;
  size_t u;
  if ((err = entry_in(o, oc, c, &unit, &u))) return err;
  h = *ret_slot = oc_slot(oc, key); /* the weight-1 entry may have taken it */
  return oc_copy(oc, oc, &oc->tab[u], key, h, key->weight);
}

/* The cache entry of job i: the cache persist holds curves that stay what
 * they are (not callbacks, unless with a content digest), local the others. */
static int job_entry(struct orc *o, size_t i, unsigned nint, struct pflex__oracle_cache *persist,
                     struct pflex__oracle_cache *local, struct pflex__oracle_cache **ret_oc,
                     size_t *ret_slot) {
  const struct pflex_alloc_job *j = &o->jobs[i];
  bool keep;
  uint64_t digest = pflex__alloc_curve_key(j, &keep);
  struct pflex__oracle_cache *oc = persist && keep ? persist : local;
  struct okey key = {digest, o->lo[i], o->hi[i], j->weight, nint};
  *ret_oc = oc;
  return entry_in(o, oc, j->curve, &key, ret_slot);
}

/* Each group's jobs in job order (mem, goff), each job's rank in it, and the
 * groups' live entries on their whole ranges. */
static void group_members(struct orc *o) {
  for (size_t g = 0; g <= o->ng; g++)
    o->goff[g] = 0;
  for (size_t i = 0; i < o->n; i++)
    if (o->gof[i] != NONE) o->goff[o->gof[i] + 1]++;
  for (size_t g = 0; g < o->ng; g++)
    o->goff[g + 1] += o->goff[g];
  for (size_t g = 0; g < o->ng; g++) {
    o->lv[g].g = g;
    o->lv[g].r0 = o->lv[g].r1 = 0;
  }
  for (size_t i = 0; i < o->n; i++) {
    size_t g = o->gof[i];
    if (g == NONE) continue;
    struct live *l = &o->lv[g];
    o->rk[i] = l->r1++;
    o->mem[o->goff[g] + o->rk[i]] = i;
    l->a = o->lo[i];
    l->b = o->hi[i];
  }
}

/* Groups the jobs on their cache entries; fixed jobs (no room, no weight) stay
 * at lo. Pointers into the pools are taken once every entry exists. */
static int orc_groups(struct orc *o, unsigned nint, struct pflex__oracle_cache *persist,
                      struct pflex__oracle_cache *local) {
  /* Entries move when a table grows: each group keeps a copy of its own. */
  struct pflex__oracle_cache **goc = malloc((o->n ? o->n : 1) * sizeof *goc);
  struct oentry *ge = malloc((o->n ? o->n : 1) * sizeof *ge);
  int err = goc && ge ? 0 : -ENOMEM;
  if (persist) persist->calls++;
  local->calls++;
  for (size_t i = 0; i < o->n && !err; i++) {
    const struct pflex_alloc_job *j = &o->jobs[i];
    o->asum += o->lo[i];
    if (!(o->hi[i] > o->lo[i]) || !(j->weight > 0)) {
      o->gof[i] = o->hid[i] = NONE;
      o->fixed_val += j->weight * pflex_curve_eval(j->curve, o->lo[i]);
      continue;
    }
    struct pflex__oracle_cache *oc;
    size_t h;
    if ((err = job_entry(o, i, nint, persist, local, &oc, &h))) break;
    struct oentry *e = &oc->tab[h];
    if (e->stamp != oc->calls) {
      e->stamp = oc->calls;
      e->gid = o->ng;
      goc[o->ng] = oc;
      ge[o->ng] = *e;
      o->gs[o->ng].job = j;
      o->lv[o->ng++].m = 0;
    }
    o->gof[i] = o->hid[i] = e->gid;
    o->lv[e->gid].m += 1;
  }
  for (size_t g = 0; g < o->ng && !err; g++) {
    const struct oentry *e = &ge[g];
    const double *base = &goc[g]->pool[e->off];
    o->gs[g] = (struct gsamp){base, base + e->k, base + 2 * e->k, e->k, o->gs[g].job};
    const double *X = base + 3 * e->k - 1;
    o->lv[g].X = X;
    o->lv[g].S = X + e->len + 1;
    o->lv[g].Q = X + 2 * e->len + 1;
    o->lv[g].base = e->base;
    o->lv[g].len = e->len;
    o->lv[g].tx = o->lv[g].cv = NAN;
  }
  o->nlive = o->ng;
  if (!err) group_members(o);
  free(goc);
  free(ge);
  return err;
}

/* ---- the relaxation ------------------------------------------------------------- */

/* Number of slopes of S[lo..hi) (strictly falling) above v, and at least v,
 * plus lo: the counts on all of S when S[0..lo) lies above v and S[hi..)
 * below it. */
static void count_slopes(const double *S, size_t lo, size_t hi, double v, size_t *ret_gt,
                         size_t *ret_ge) {
  size_t end = hi;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (S[mid] > v)
      lo = mid + 1;
    else
      hi = mid;
  }
  *ret_gt = lo;
  *ret_ge = lo < end && S[lo] == v ? lo + 1 : lo;
}

/* Length of the live majorants' segments counted by cgt (or cge). */
static double live_len(const struct orc *o, bool ge) {
  double s = 0;
  for (size_t k = 0; k < o->nlive; k++) {
    const struct live *l = &o->lv[k];
    if (l->m > 0) s += l->m * (l->X[ge ? l->cge : l->cgt] - l->X[0]);
  }
  return s;
}

static void set_counts(struct orc *o, double v) {
  for (size_t k = 0; k < o->nlive; k++) {
    count_slopes(o->lv[k].S, 0, o->lv[k].len, v, &o->lv[k].cgt, &o->lv[k].cge);
    o->lv[k].cv = v;
  }
}

/* The counts at v of the entries with jobs: kept where they were counted at v
 * already (the last node's threshold is the next one's first probe), else
 * searched for in the open range [rl, rr) only. Every slope left open lies
 * strictly between the probes so far, and so does v (a slope of an open
 * range, or the first probe), so a count is in its open range, and a closed
 * range is its end. Entries without jobs (m = 0) are not counted: nothing
 * reads them. */
static void lp_count(struct orc *o, double v) {
  for (size_t k = 0; k < o->nlive; k++) {
    struct live *l = &o->lv[k];
    if (l->cv == v || !(l->m > 0)) continue;
    count_slopes(l->S, o->rl[k], o->rr[k], v, &l->cgt, &l->cge);
    l->cv = v;
  }
}

/* Judges the probe whose counts are set: 0 when its slope is the threshold
 * for budget B; else the open ranges shrink to the side where the threshold
 * lies, and that side is returned (+1: above the probe, -1: below). */
static int lp_judge(struct orc *o, double B) {
  double gt = 0, ge = 0; /* live_len's two sums, term by term, in one pass */
  for (size_t k = 0; k < o->nlive; k++) {
    const struct live *l = &o->lv[k];
    if (l->m > 0) {
      gt += l->m * (l->X[l->cgt] - l->X[0]);
      ge += l->m * (l->X[l->cge] - l->X[0]);
    }
  }
  o->pgt = gt;
  o->pge = ge;
  if (gt >= B) {
    for (size_t k = 0; k < o->nlive; k++)
      if (o->lv[k].cgt < o->rr[k]) o->rr[k] = o->lv[k].cgt;
    return 1;
  }
  if (ge >= B) return 0;
  for (size_t k = 0; k < o->nlive; k++)
    if (o->lv[k].cge > o->rl[k]) o->rl[k] = o->lv[k].cge;
  return -1;
}

/* One probe of the threshold search at slope v (lp_judge's answer). */
static int lp_probe(struct orc *o, double v, double B) {
  lp_count(o, v);
  return lp_judge(o, B);
}

/* The next probe: the weighted median of the middle slopes of the open
 * ranges, each cut to its w slopes nearest the first probe (side +1: the
 * threshold lies above it, so its near end is rr; -1: rl). False when no
 * range is open. */
static bool lp_pivot(struct orc *o, int side, size_t w, double *ret_v) {
  size_t nm = 0;
  double tot = 0;
  for (size_t k = 0; k < o->nlive; k++) {
    size_t a = o->rl[k], b = o->rr[k];
    if (a >= b) continue;
    if (b - a > w) {
      if (side > 0)
        a = b - w;
      else
        b = a + w;
    }
    o->mids[nm++] = (struct pflex__seg){o->lv[k].S[a + (b - a) / 2], (double)(b - a)};
    tot += (double)(b - a);
  }
  if (nm == 0) return false;
  *ret_v = pflex__alloc_threshold(o->mids, nm, 0.5 * tot);
  return true;
}

/* ---- the walk from the hint: a min-heap of the next slopes --------------------- */

static void heap_down(struct hslope *h, size_t n, size_t i) {
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) return;
    if (c + 1 < n && h[c + 1].key < h[c].key) c++;
    if (!(h[c].key < h[i].key)) return;
    struct hslope t = h[i];
    h[i] = h[c];
    h[c] = t;
    i = c;
  }
}

/* Entry k's segment c as a heap element, or false when it has none there. */
static bool walk_seg(const struct orc *o, int side, size_t k, size_t c, struct hslope *ret) {
  const struct live *l = &o->lv[k];
  if (!(l->m > 0) || c >= l->len) return false;
  *ret = (struct hslope){side > 0 ? l->S[c] : -l->S[c], k, c};
  return true;
}

/* The counts at v after a walk that passed every slope up to v: a popped
 * entry's cgt (side +1) or cge (side -1) is set, the other follows. */
static void walk_counts(struct orc *o, int side, double v) {
  for (size_t k = 0; k < o->nlive; k++) {
    struct live *l = &o->lv[k];
    if (!(l->m > 0)) continue;
    if (side > 0)
      l->cge = l->cgt < l->len && l->S[l->cgt] == v ? l->cgt + 1 : l->cgt;
    else
      l->cgt = l->cge > 0 && l->S[l->cge - 1] == v ? l->cge - 1 : l->cge;
    l->cv = v;
  }
}

/* After a probe that was not the threshold (side: where it lies; counts and
 * pgt/pge that probe's): the slopes beyond the probe, nearest first, from a
 * heap, while the length they take away (or add) keeps the probe's sum on
 * the same side of B; the first slope that brings it across is probed, its
 * counts known from the walk (lp_judge: rounding in the walk's sum cannot
 * make a wrong slope pass). Past limit slopes, the slope reached is probed
 * the ordinary way. Either slope lies beyond the probe, inside the open
 * ranges. Returns lp_judge's answer and the slope in *ret_v; 2 when no slope
 * is beyond. */
static int lp_walk(struct orc *o, int side, double B, size_t limit, double *ret_v) {
  size_t n = 0;
  for (size_t k = 0; k < o->nlive; k++) {
    size_t c = side > 0 ? o->lv[k].cgt - 1 : o->lv[k].cge; /* cgt 0: c wraps, no segment */
    if (walk_seg(o, side, k, c, &o->heap[n])) n++;
  }
  for (size_t i = n / 2; i-- > 0;)
    heap_down(o->heap, n, i);
  double len = side > 0 ? o->pgt : o->pge, v = NAN;
  for (size_t step = 0; n > 0 && step < limit; step++) {
    struct hslope t = o->heap[0];
    struct live *l = &o->lv[t.k];
    v = side > 0 ? t.key : -t.key;
    len += (side > 0 ? -l->m : l->m) * (l->X[t.c + 1] - l->X[t.c]);
    if (side > 0)
      l->cgt = t.c;
    else
      l->cge = t.c + 1;
    l->cv = NAN;
    size_t c = side > 0 ? t.c - 1 : t.c + 1;
    if (!walk_seg(o, side, t.k, c, &o->heap[0])) o->heap[0] = o->heap[--n];
    heap_down(o->heap, n, 0);
    bool tie = n > 0 && o->heap[0].key == t.key;
    if (!tie && (side > 0 ? len < B : len >= B)) {
      walk_counts(o, side, v);
      *ret_v = v;
      return lp_judge(o, B);
    }
  }
  *ret_v = v;
  return isnan(v) ? 2 : lp_probe(o, v, B);
}

/* The threshold slope for budget B over the live majorants (+INF when B <= 0,
 * -INF when all their segments are shorter), by a search over their sorted
 * slopes. A first probe at hint (the last node's threshold: often this
 * one's, and mostly near it), then rounds that each probe the weighted
 * median of the middle slopes of the ranges still open, at first of their
 * parts nearest the hint (2, 4, 8, ... slopes each), then of the whole
 * ranges, so at least a quarter of what is open closes. The threshold is the
 * one slope v with len(> v) < B <= len(>= v), whatever the probes. Leaves
 * cgt/cge set for it. Live entries without jobs (m = 0) get no counts:
 * nothing reads them. */
static double lp_lambda(struct orc *o, double B, double hint) {
  if (!(B > 0)) {
    set_counts(o, INFINITY);
    return INFINITY;
  }
  for (size_t k = 0; k < o->nlive; k++) {
    o->rl[k] = 0;
    o->rr[k] = o->lv[k].m > 0 ? o->lv[k].len : 0;
  }
  int side = 0;
  size_t w = SIZE_MAX;
  if (isfinite(hint)) {
    if ((side = lp_probe(o, hint, B)) == 0) return hint;
    double v;
    if (lp_walk(o, side, B, 8 * o->nlive + 64, &v) == 0) return v;
    w = 1;
  }
  for (;;) {
    w = w <= SIZE_MAX / 2 ? 2 * w : SIZE_MAX;
    double v;
    if (!lp_pivot(o, side, w, &v)) break;
    if (lp_probe(o, v, B) == 0) return v;
  }
  set_counts(o, -INFINITY);
  return -INFINITY;
}

/* The relaxation's value for budget B at threshold lambda. */
static double lp_bound(const struct orc *o, double B, double lambda) {
  double ub = o->fixed_val;
  for (size_t k = 0; k < o->nlive; k++) {
    const struct live *l = &o->lv[k];
    if (l->m > 0) ub += l->m * (l->base + l->Q[l->cgt]);
  }
  if (isfinite(lambda)) ub += lambda * (B - live_len(o, false));
  return ub;
}

/* The relaxation's solution: p, each job's majorant value u and weighted
 * throughput tv there; segments at exactly lambda share what is left in job
 * order, so one job at most ends inside one. Power left when every
 * majorant is spent goes out in job order up to each job's upper bound. Its
 * true value (the incumbent if best so far). */
static double lp_point(struct orc *o, double B, double lambda) {
  double left = isfinite(lambda) ? B - live_len(o, false) : 0;
  double val = 0;
  for (size_t i = 0; i < o->n; i++) {
    if (o->hid[i] == NONE) {
      o->p[i] = o->lo[i];
      o->u[i] = o->tv[i] = o->jobs[i].weight * pflex_curve_eval(o->jobs[i].curve, o->lo[i]);
      val += o->tv[i];
      continue;
    }
    struct live *l = &o->lv[o->hid[i]];
    double x = l->X[l->cgt], ui = l->base + l->Q[l->cgt], w = o->jobs[i].weight;
    bool tie = left > 0 && l->cgt < l->len && l->S[l->cgt] == lambda;
    if (tie) {
      double take = fmin(l->X[l->cgt + 1] - x, left);
      left -= take;
      x += take;
      ui += lambda * take;
      o->tv[i] = w * pflex_curve_eval(o->jobs[i].curve, x);
    } else {
      if (!(l->tx == x)) {
        l->tval = w * pflex_curve_eval(o->jobs[i].curve, x);
        l->tx = x;
      }
      o->tv[i] = l->tval;
    }
    o->p[i] = x;
    o->u[i] = ui;
    val += o->tv[i];
  }
  if (isinf(lambda) && lambda < 0) {
    double rest = B - live_len(o, false);
    for (size_t i = 0; i < o->n && rest > 0; i++) {
      double take = fmin(o->hi[i] - o->p[i], rest);
      if (!(take > 0)) continue;
      double w = o->jobs[i].weight;
      double t = w * pflex_curve_eval(o->jobs[i].curve, o->p[i] + take);
      if (!(t >= o->tv[i])) continue; /* a curve that falls: keep the power */
      o->p[i] += take;
      rest -= take;
      val += t - o->tv[i];
      o->tv[i] = t;
    }
  }
  if (val > o->best) {
    o->best = val;
    memcpy(o->bestp, o->p, o->n * sizeof *o->p);
  }
  return val;
}

/* ---- branching ------------------------------------------------------------------ */

/* The sample of group g at x, or NONE. */
static size_t sample_at(const struct gsamp *g, double x) {
  size_t lo = 0, hi = g->k;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g->xs[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < g->k && g->xs[lo] == x ? lo : NONE;
}

/* The first sample above x. */
static size_t first_above(const struct gsamp *g, double x) {
  size_t lo = 0, hi = g->k;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g->xs[mid] <= x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The lift a range [x0, x1] between two neighbouring points needs (their
 * weighted values y0, y1): the curve's excess over their chord. */
static double end_lift(const struct gsamp *g, double x0, double x1, double y0, double y1) {
  const struct pflex_alloc_job *j = g->job;
  return pflex_curve_piecewise_linear(j->curve) ? 0
                                                : chord_excess(j->curve, j->weight, x0, x1, y0, y1);
}

/* The majorant of group g on [a, b] into the node pool as live entry L
 * (ranks set by the caller): the hull of the range's lifted points. Samples
 * strictly inside keep their lifts (the larger of their two intervals'); an
 * end that is not a sample gets the curve's value there, lifted by the
 * excess over the chord to the nearest sample inside (or to the other end
 * when none is inside), which shrinks with the range: a job confined to a
 * small part of one sample interval is bounded ever more tightly. */
static int live_sub(struct orc *o, size_t g, double a, double b, struct live *L) {
  const struct gsamp *s = &o->gs[g];
  const struct pflex_alloc_job *j = s->job;
  if (o->nnpl + 3 * (s->k + 2) > o->cap_npl) return -ENOMEM; /* reserved for the deepest path */
  size_t sa = sample_at(s, a), sb = sample_at(s, b), fa = first_above(s, a), lb = fa;
  while (lb < s->k && s->xs[lb] < b)
    lb++;
  /* samples strictly inside: [fa, lb) */
  double ya = sa != NONE ? s->ys[sa] : j->weight * pflex_curve_eval(j->curve, a);
  double yb = sb != NONE ? s->ys[sb] : j->weight * pflex_curve_eval(j->curve, b);
  struct pflex__hullpt *hp = o->hp;
  size_t nh = 0;
  if (fa == lb) { /* no sample inside */
    double e = end_lift(s, a, b, ya, yb);
    hp[nh++] = (struct pflex__hullpt){a, ya + e};
    if (b > a) hp[nh++] = (struct pflex__hullpt){b, yb + e};
  } else {
    /* the lift of the end's interval: a sample's own one inside the range */
    double ea = sa != NONE ? s->eps[sa] : end_lift(s, a, s->xs[fa], ya, s->ys[fa]);
    double eb = sb != NONE ? s->eps[sb - 1] : end_lift(s, s->xs[lb - 1], b, s->ys[lb - 1], yb);
    hp[nh++] = (struct pflex__hullpt){a, ya + ea};
    for (size_t m = fa; m < lb; m++) {
      double left = m == fa ? ea : s->eps[m - 1], right = m + 1 == lb ? eb : s->eps[m];
      hp[nh++] = (struct pflex__hullpt){s->xs[m], s->ys[m] + fmax(left, right)};
    }
    hp[nh++] = (struct pflex__hullpt){b, yb + eb};
  }
  nh = pflex__alloc_upper_hull(hp, nh);
  double *X = &o->npl[o->nnpl], *S = X + nh, *Q = S + nh, base;
  size_t len = hull_arrays(hp, nh, X, S, Q, &base);
  *L = (struct live){
      .X = X, .S = S, .Q = Q, .base = base, .a = a, .b = b, .g = g, .len = len, .tx = NAN,
      .cv = NAN};
  o->nnpl += 3 * nh;
  return 0;
}

static int node(struct orc *o, int depth);

/* A part of a live entry for a child node: ranks [r0, r1) on [a, b]. */
struct piece {
  size_t r0, r1;
  double a, b;
};

/* Explores the child in which live entry L is replaced by its pieces. */
static int split(struct orc *o, size_t L, const struct piece *pc, int npc, int depth) {
  struct live old = o->lv[L];
  size_t old_nlive = o->nlive, old_npl = o->nnpl;
  double old_asum = o->asum;
  const size_t *mem = &o->mem[o->goff[old.g]];
  o->lv[L].m = 0;
  o->asum -= old.m * old.a;
  int err = 0;
  for (int q = 0; q < npc && !err; q++) {
    if (pc[q].r1 == pc[q].r0) continue;
    size_t N = o->nlive;
    if (pc[q].a == old.a && pc[q].b == old.b)
      o->lv[N] = old; /* same range, same majorant */
    else if ((err = live_sub(o, old.g, pc[q].a, pc[q].b, &o->lv[N])))
      break;
    o->lv[N].r0 = pc[q].r0;
    o->lv[N].r1 = pc[q].r1;
    o->lv[N].m = (double)(pc[q].r1 - pc[q].r0);
    o->asum += o->lv[N].m * pc[q].a;
    o->nlive++;
    for (size_t r = pc[q].r0; r < pc[q].r1; r++)
      o->hid[mem[r]] = N;
  }
  if (!err) err = node(o, depth + 1);
  for (size_t r = old.r0; r < old.r1; r++)
    o->hid[mem[r]] = L;
  o->lv[L] = old;
  o->nlive = old_nlive;
  o->nnpl = old_npl;
  o->asum = old_asum;
  return err;
}

/* Splits at x the range of job j, the one of rank k in its live entry L.
 * Jobs of a group are interchangeable, so only allocations in which their
 * powers do not rise with rank need be searched: either the job of rank k
 * is at most x, and so are those after it, or it is at least x, and so are
 * those before it. Without this, each identical job would be split in turn. */
static int branch(struct orc *o, size_t j, double x, int depth) {
  size_t L = o->hid[j];
  const struct live *l = &o->lv[L];
  size_t k = o->rk[j];
  struct piece left[2] = {{l->r0, k, l->a, l->b}, {k, l->r1, l->a, x}};
  struct piece right[2] = {{l->r0, k + 1, x, l->b}, {k + 1, l->r1, l->a, l->b}};
  double lambda = o->hint; /* this node's threshold: the second child's hint too */
  int err = split(o, L, left, 2, depth);
  o->hint = lambda;
  if (!err) err = split(o, L, right, 2, depth);
  return err;
}

static double tol_of(const struct orc *o) {
  return PFLEX__ORACLE_TOL * fabs(o->best);
}

/* One node: the relaxation under the current ranges; closed when its bound
 * is within the tolerance of the best found, else split at the job whose
 * majorant lies furthest above its curve. */
static int node(struct orc *o, int depth) {
  o->nodes++;
  double B = o->target - o->asum;
  if (B < -1e-12 * fabs(o->target)) return 0; /* the ranges' floors exceed the target */
  double lambda = lp_lambda(o, B, o->hint), ub = lp_bound(o, B, lambda);
  o->hint = lambda;
  /* Every node that is not split leaves its bound in open: the largest,
   * less the best value, is the certified gap. */
  if (ub <= o->best + tol_of(o)) {
    o->open = fmax(o->open, ub);
    return 0;
  }
  lp_point(o, B, lambda);
  if (ub <= o->best + tol_of(o)) {
    o->open = fmax(o->open, ub);
    return 0;
  }
  size_t j = NONE;
  double dmax = 0;
  for (size_t i = 0; i < o->n; i++)
    if (o->hid[i] != NONE && o->u[i] - o->tv[i] > dmax) {
      dmax = o->u[i] - o->tv[i];
      j = i;
    }
  if (j == NONE || dmax < 0.125 * tol_of(o) || depth >= ORACLE_MAX_DEPTH ||
      o->nodes >= o->max_nodes) {
    o->open = fmax(o->open, ub); /* left open: the reported gap says so */
    return 0;
  }
  const struct live *l = &o->lv[o->hid[j]];
  double a = l->a, b = l->b, x = o->p[j];
  if (!(x > a + 1e-9 * (b - a) && x < b - 1e-9 * (b - a))) x = 0.5 * (a + b);
  return branch(o, j, x, depth);
}

/* Room in the node pool for the deepest path of restricted majorants. */
static int reserve_nodes(struct orc *o, struct pflex__oracle_cache *keep) {
  size_t kmax = 0;
  for (size_t g = 0; g < o->ng; g++)
    if (o->gs[g].k > kmax) kmax = o->gs[g].k;
  size_t need = (size_t)(ORACLE_MAX_DEPTH + 1) * 2 * 3 * (kmax + 2);
  if (keep->ncap < need) {
    double *t = realloc(keep->npl, need * sizeof *t);
    if (!t) return -ENOMEM;
    keep->npl = t;
    keep->ncap = need;
  }
  o->npl = keep->npl;
  o->cap_npl = keep->ncap;
  if (kmax + 2 > o->kmax) {
    o->kmax = kmax + 2;
    free(o->hp);
    if (!(o->hp = malloc(o->kmax * sizeof *o->hp))) return -ENOMEM;
  }
  return 0;
}

static int oracle_cache_new(struct pflex__oracle_cache **ret) {
  return (*ret = calloc(1, sizeof **ret)) ? 0 : -ENOMEM;
}

int pflex__alloc_oracle(const struct pflex_alloc_job *jobs, size_t n, const double *lo,
                        const double *hi, double target, struct pflex__oracle_cache **cache,
                        double *p, double *ret_gap) {
  struct orc o = {.jobs = jobs,
                  .n = n,
                  .lo = lo,
                  .hi = hi,
                  .target = target,
                  .best = -INFINITY,
                  .open = -INFINITY,
                  .hint = NAN,
                  .max_nodes = (int)fmin(ORACLE_MAX_NODES, 4.0 + ORACLE_NODE_WORK / (n ? n : 1))};
  struct pflex__oracle_cache *local = NULL;
  int err = orc_alloc(&o, n);
  if (!err && cache && !*cache) err = oracle_cache_new(cache);
  if (!err) err = oracle_cache_new(&local);
  struct pflex__oracle_cache *persist = cache ? *cache : NULL;
  if (!err && persist &&
      (persist->npool > ORACLE_CACHE_DOUBLES || persist->nused > 4 * n + 65536))
    err = oc_rotate(persist);
  unsigned nint =
      n <= 1024 ? ORACLE_INTERVALS : (unsigned)fmax(4.0, ORACLE_INTERVALS * 1024.0 / (double)n);
  if (!err) err = orc_groups(&o, nint, persist, local);
  if (!err) err = reserve_nodes(&o, persist ? persist : local);
  if (!err) err = node(&o, 0);
  if (!err) {
    memcpy(p, o.bestp, n * sizeof *p);
    *ret_gap = fmax(0.0, o.open - o.best);
  }
  orc_release(&o);
  pflex__oracle_cache_free(local);
  return err;
}
