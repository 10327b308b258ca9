/* The proportional strategies and optimal on a flat copy of the jobs
 * (include/pflex/alloc.h, pflex_alloc_flat): bounds, weights, ratios and
 * what the cap mapping needs in arrays read front to back, filled once; a
 * round reads no curve (optimal: its sampled hulls and, for measured
 * curves, their cubic pieces for the polish, alloc_flat_polish.c). The
 * water filling is the one of alloc.c with a different search for its
 * level: one pass buckets the jobs by ratio (the bits of a positive double
 * order like the double), the bucket sums place the level in one bucket,
 * and only that bucket's jobs go through the exact selection
 * (pflex__alloc_wf_clip); the powers, their sum and their caps then come
 * in one more pass. Same clipped set as alloc.c up to rounding in the sums;
 * powers agree to rounding, caps bit for bit (tests/unit/test_alloc_flat.c). */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/hugepage.h"
#include "core/alloc_flat_polish.h"
#include "core/alloc_internal.h"
#include "pflex/alloc.h"
#include "pflex/error.h"

/* Buckets of the level search: about one per 8 jobs, at most 4096 (their
 * sums stay in the L1/L2 cache), at least 16. */
#define MAX_BUCKETS 4096

/* Job i's record in the pool (pairs of doubles from off[i]): first its cap
 * limits (cap_min, cap_max); then, when its curve's points carry caps, its
 * nk[i] >= 1 knots (power, cap), else two pairs (the curve's power range,
 * -INF and P_max without a curve; gpus, 0); then (optimal) ns[i] hull
 * segments (slope, length). A measured curve's cubic pieces (optimal) lie
 * in a pool of their own (pc, alloc_flat_polish.h). What
 * pflex_curve_cap_for_power reads, in one stream: a run reads off, nk and
 * the record, nothing else. */
#define REC_HEAD 1u
/* Up to this many knots, the cap's knot search takes the same steps for
 * every job: a loop whose length varies from job to job mispredicts. */
#define SHORT_KNOTS 8u

/* Jobs ahead whose record a pass that reads only part of each record asks
 * the memory for: a stride the hardware prefetcher does not follow. */
#define AHEAD 8
#if defined(__GNUC__)
#define PREFETCH(addr) __builtin_prefetch(addr)
#else
#define PREFETCH(addr) ((void)(addr))
#endif

/* The polish's passes at most (a Newton step on the threshold slope each),
 * and how close to the target their powers must sum to stop and be kept
 * (what is left, at most 1e-9 of the target, costs at most about that
 * share of the throughput; a sum over the target is cut by settle). */
#define POLISH_PASSES 4
#define POLISH_TOL 1e-9
#define CHECKED_JOBS 4096
/* From this many jobs on, the threshold slope is searched in a bracket
 * from a sample of about SAMPLE_JOBS jobs (greedy), SAMPLE_EPS of the
 * sample's budget either side of its level. */
#define SAMPLED_JOBS 16384
#define SAMPLE_JOBS 8192
#define SAMPLE_EPS 0.025
#define REC_NOKNOTS 2u
/* Doubles of npc pieces in the pool: theirs and the last one's end. */
#define PIECES_LEN(npc) ((npc) ? (npc)*PFLEX__FLAT_PIECE + 1 : 0)

/* Rooms of doubles, one per job, in one array: a job replaced by a longer
 * one moves to the end, and the array is compacted when replaced jobs left
 * more than half of it unused. POOL_SLACK zeros follow the last room: the
 * caps' knot search reads a fixed count of knots, past a short record's
 * end (masked), and stays inside the array. */
#define POOL_SLACK (2u * SHORT_KNOTS)
struct pool {
  double *v;
  size_t n, cap, live; /* doubles used (dead ones too), held, live */
  size_t *off, *len;   /* job i's room (off SIZE_MAX: none yet) */
};

static int pool_init(struct pool *pl, size_t jobs) {
  *pl = (struct pool){.off = pflex__hugepage_malloc(jobs, sizeof *pl->off),
                      .len = pflex__hugepage_calloc(jobs, sizeof *pl->len)};
  for (size_t i = 0; pl->off && i < jobs; i++)
    pl->off[i] = SIZE_MAX;
  return pl->off && pl->len ? 0 : -ENOMEM;
}

static void pool_release(struct pool *pl) {
  free(pl->v), free(pl->off), free(pl->len);
}

/* Room for len more doubles; on -ENOMEM every room is as it was. */
static int pool_reserve(struct pool *pl, size_t jobs, size_t len) {
  if (pl->n > 2 * pl->live + 2048) {
    double *t = pflex__hugepage_malloc(pl->live + len + POOL_SLACK, sizeof *t);
    if (!t) return -ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < jobs; i++) {
      if (pl->off[i] == SIZE_MAX) continue;
      memcpy(&t[m], &pl->v[pl->off[i]], pl->len[i] * sizeof *t);
      pl->off[i] = m;
      m += pl->len[i];
    }
    free(pl->v);
    pl->v = t, pl->n = m, pl->cap = pl->live + len + POOL_SLACK;
  }
  if (pl->n + len + POOL_SLACK <= pl->cap) return 0;
  size_t nc = pl->cap ? 2 * pl->cap : 2048;
  while (nc < pl->n + len + POOL_SLACK)
    nc *= 2;
  double *t = pflex__hugepage_realloc(pl->v, nc, sizeof *t);
  if (!t) return -ENOMEM;
  pl->v = t, pl->cap = nc;
  return 0;
}

/* Job i's room for len doubles, after pool_reserve(len): its old room when
 * it fits, else a new one at the end. */
static double *pool_place(struct pool *pl, size_t i, size_t len) {
  if (pl->off[i] == SIZE_MAX || len > pl->len[i]) pl->off[i] = pl->n, pl->n += len;
  pl->live = pl->live - pl->len[i] + len;
  pl->len[i] = len;
  memset(&pl->v[pl->n], 0, POOL_SLACK * sizeof *pl->v);
  return &pl->v[pl->off[i]];
}

struct scratch;
static void scratch_free(struct scratch *s);
struct pflex_alloc_flat {
  enum pflex_alloc_strategy strategy;
  size_t n;
  double *lo, *hi, *w, *r; /* r: headroom / weight, for a weight > 0 */
  bool *bad;               /* the job's throughput floor is above its T_max */
  size_t nbad;
  uint64_t rlo, rhi; /* bits of the least and largest ratio (optimal: slope) seen */
  struct pool rec;   /* per job its record */
  uint32_t *nk, *ns; /* its cap knots (0: none) and hull segments */
  struct pool pc;    /* optimal: per job its curve's pieces (none: not polished) */
  unsigned knots;    /* optimal: points per curve */
  bool polish;       /* optimal: polish on the curves' pieces (opts->no_local_search: not) */
  /* optimal: one job's sampling (room for maxk points) */
  double *xs, *ys;
  struct pflex__hullpt *hp;
  struct pflex__seg *seg;
  double *pcs; /* its pieces */
  size_t maxk;
  _Atomic(struct scratch *) spare; /* the last run's scratch (scratch_take) */
};

static uint64_t bits(double x) {
  return pflex__alloc_dbits(x);
}

static double from_bits(uint64_t u) {
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* Room for one job's sampling (optimal): knots + points + 2. */
static int sample_reserve(struct pflex_alloc_flat *f, size_t k) {
  if (k <= f->maxk) return 0;
  free(f->xs), free(f->ys), free(f->hp), free(f->seg), free(f->pcs);
  f->pcs = malloc((k * PFLEX__FLAT_PIECE + 1) * sizeof *f->pcs);
  f->xs = malloc(k * sizeof *f->xs);
  f->ys = malloc(k * sizeof *f->ys);
  f->hp = malloc(k * sizeof *f->hp);
  f->seg = malloc(k * sizeof *f->seg);
  f->maxk = f->xs && f->ys && f->hp && f->seg && f->pcs ? k : 0;
  return f->maxk ? 0 : -ENOMEM;
}

/* Job j's hull segments on its bounds into f->seg (optimal; as one greedy
 * pass of pflex_alloc_run would sample them): their number; its curve's
 * pieces into f->pcs (*ret_npc). */
static int sample(struct pflex_alloc_flat *f, const struct pflex_alloc_job *j,
                  const struct pflex__prep *p, size_t *ret_ns, size_t *ret_npc) {
  size_t np;
  *ret_ns = *ret_npc = 0;
  if (f->strategy != PFLEX_ALLOC_OPTIMAL) return 0;
  if (!j->curve) return -EINVAL;
  pflex_curve_points(j->curve, &np);
  if (sample_reserve(f, f->knots + np + 2) < 0) return -ENOMEM;
  if (p->hi > p->lo && j->weight > 0)
    *ret_ns = pflex__alloc_hull_segments(j, p->lo, p->hi, f->knots, f->xs, f->ys, f->hp, f->seg);
  if (*ret_ns && f->polish) *ret_npc = pflex__flat_pieces(j->curve, p->lo, p->hi, f->pcs);
  for (size_t m = 0; m < *ret_ns; m++) { /* the bracket of slopes (flat_threshold) */
    uint64_t b = bits(f->seg[m].slope);
    if (b < f->rlo) f->rlo = b;
    if (b > f->rhi) f->rhi = b;
  }
  return 0;
}

/* Job i's record from its curve (as pflex_curve_cap_for_power reads it)
 * and its ns segments from f->seg. Only the reservation can fail, before
 * anything of job i changed. */
static int fill_pool(struct pflex_alloc_flat *f, size_t i, const struct pflex_alloc_job *j,
                     const struct pflex__prep *p, size_t ns, size_t npc) {
  size_t np = 0;
  const struct pflex_curve_point *pt = j->curve ? pflex_curve_points(j->curve, &np) : NULL;
  bool with_caps = np > 0;
  for (size_t m = 0; m < np; m++)
    with_caps = with_caps && pt[m].cap_w > 0;
  if (np > UINT32_MAX || ns > UINT32_MAX) return -EOVERFLOW;
  size_t nk = with_caps ? np : 0, len = 2 * (REC_HEAD + (nk ? nk : REC_NOKNOTS) + ns);
  if (pool_reserve(&f->rec, f->n, len) < 0 || pool_reserve(&f->pc, f->n, PIECES_LEN(npc)) < 0)
    return -ENOMEM;
  f->nk[i] = (uint32_t)nk;
  f->ns[i] = (uint32_t)ns;
  double *pc = pool_place(&f->pc, i, PIECES_LEN(npc));
  if (npc) memcpy(pc, f->pcs, PIECES_LEN(npc) * sizeof *pc);
  double *k = pool_place(&f->rec, i, len);
  k[0] = p->cap_min, k[1] = p->cap_max, k += 2 * REC_HEAD;
  for (size_t m = 0; m < nk; m++)
    k[2 * m] = pt[m].power_w, k[2 * m + 1] = pt[m].cap_w;
  if (!nk) {
    k[0] = j->curve ? pflex_curve_p_min(j->curve) : -INFINITY;
    k[1] = j->curve ? pflex_curve_p_max(j->curve) : p->hi;
    k[2] = j->gpus, k[3] = j->curve ? 0 : 1; /* 1: pflex_alloc_run's mapping without a curve */
  }
  k += 2 * (nk ? nk : REC_NOKNOTS);
  for (size_t m = 0; m < ns; m++)
    k[2 * m] = f->seg[m].slope, k[2 * m + 1] = f->seg[m].dp;
  return 0;
}

/* Resolves job i into the arrays: all of it, or (on an error) nothing. */
static int fill_job(struct pflex_alloc_flat *f, size_t i, const struct pflex_alloc_job *j) {
  struct pflex__prep p;
  bool bad;
  double w;
  size_t ns = 0, npc = 0;
  int err = pflex__alloc_prep_job(j, &p, &bad);
  if (!err && f->strategy == PFLEX_ALLOC_OPTIMAL)
    w = j->weight;
  else if (!err)
    err = pflex__alloc_share_weight(j, &p, f->strategy, &w);
  if (!err) err = sample(f, j, &p, &ns, &npc);
  if (!err) err = fill_pool(f, i, j, &p, ns, npc);
  if (err) return err;
  f->nbad = f->nbad - f->bad[i] + bad;
  f->bad[i] = bad;
  f->lo[i] = p.lo;
  f->hi[i] = p.hi;
  f->w[i] = w;
  f->r[i] = w > 0 ? (p.hi - p.lo) / w : 0;
  if (w > 0 && f->strategy != PFLEX_ALLOC_OPTIMAL) {
    uint64_t b = bits(f->r[i]);
    if (b < f->rlo) f->rlo = b;
    if (b > f->rhi) f->rhi = b;
  }
  return 0;
}
/* Both pools' rooms for every job at once, before the first is filled: a
 * bound on each job's record (its points; optimal: at most knots + points +
 * 2 segments, as sample_reserve) and pieces, and a quarter more for jobs
 * replaced by longer ones. Grown job by job, the pools were reallocated
 * (moved) about 20 times; on a virtual machine whose hypervisor maps the
 * guest's page tables (this bench's), the first run over moved pages cost
 * 80 ms more at 10^6 jobs than the next (bench/README.md, tenth wave).
 * Rooms reserved but not filled are address space, no memory (with the
 * kernel's default overcommit; under vm.overcommit_memory=2 they count
 * against the commit limit). */
static int presize(struct pflex_alloc_flat *f, const struct pflex_alloc_job *jobs, size_t n) {
  size_t rec = 0, pc = 0;
  bool opt = f->strategy == PFLEX_ALLOC_OPTIMAL;
  for (size_t i = 0; i < n; i++) {
    size_t np = 0;
    if (jobs[i].curve) pflex_curve_points(jobs[i].curve, &np);
    rec += 2 * (REC_HEAD + (np > REC_NOKNOTS ? np : REC_NOKNOTS) + (opt ? f->knots + np + 2 : 0));
    pc += opt && f->polish && np > 1 ? PIECES_LEN(np - 1) : 0;
  }
  if (pool_reserve(&f->rec, n, rec + rec / 4) < 0) return -ENOMEM;
  return pool_reserve(&f->pc, n, pc + pc / 4);
}

int pflex_alloc_flat_new(const struct pflex_alloc_job *jobs, size_t n,
                         enum pflex_alloc_strategy strategy, const struct pflex_alloc_opts *opts,
                         struct pflex_alloc_flat **ret_flat) {
  if ((!jobs && n) || !ret_flat || (unsigned)strategy > PFLEX_ALLOC_OPTIMAL) return -EINVAL;
  struct pflex_alloc_flat *f = calloc(1, sizeof *f);
  size_t m = n ? n : 1;
  if (!f) return -ENOMEM;
  unsigned knots = opts && opts->knots ? opts->knots : PFLEX__ALLOC_DEFAULT_KNOTS;
  *f = (struct pflex_alloc_flat){.strategy = strategy,
                                 .n = n,
                                 .rlo = UINT64_MAX,
                                 .knots = knots < 2 ? 2 : knots,
                                 .polish = !(opts && opts->no_local_search)};
  f->lo = pflex__hugepage_malloc(m, sizeof *f->lo);
  f->hi = pflex__hugepage_malloc(m, sizeof *f->hi);
  f->w = pflex__hugepage_malloc(m, sizeof *f->w);
  f->r = pflex__hugepage_malloc(m, sizeof *f->r);
  f->bad = pflex__hugepage_calloc(m, sizeof *f->bad);
  f->nk = pflex__hugepage_calloc(m, sizeof *f->nk);
  f->ns = pflex__hugepage_calloc(m, sizeof *f->ns);
  int err = f->lo && f->hi && f->w && f->r && f->bad && f->nk && f->ns ? 0 : -ENOMEM;
  if (!err) err = pool_init(&f->rec, m);
  if (!err) err = pool_init(&f->pc, m);
  if (!err) err = presize(f, jobs, n);
  for (size_t i = 0; !err && i < n; i++)
    err = fill_job(f, i, &jobs[i]);
  if (err) {
    pflex_alloc_flat_free(f);
    return err;
  }
  *ret_flat = f;
  return 0;
}

int pflex_alloc_flat_set(struct pflex_alloc_flat *f, size_t i, const struct pflex_alloc_job *job) {
  if (!f || !job || i >= f->n) return -EINVAL;
  return fill_job(f, i, job);
}

void pflex_alloc_flat_free(struct pflex_alloc_flat *f) {
  if (!f) return;
  free(f->lo);
  free(f->hi);
  free(f->w);
  free(f->r);
  free(f->bad);
  pool_release(&f->rec);
  pool_release(&f->pc);
  free(f->nk);
  free(f->ns);
  free(f->pcs);
  free(f->xs);
  free(f->ys);
  free(f->hp);
  free(f->seg);
  scratch_free(atomic_load(&f->spare));
  free(f);
}

/* The level search's bucket sums: headroom, weight and count of the jobs
 * with a weight per bucket of ratio bits (bucket b from rlo + (b << shift)). */
struct buckets {
  double h[MAX_BUCKETS], w[MAX_BUCKETS], wsuf[MAX_BUCKETS + 1];
  size_t cnt[MAX_BUCKETS], nb;
  unsigned shift;
};

/* The shift that maps the bracket [rlo, rhi] of bits onto nb buckets. */
static unsigned bucket_shift(const struct pflex_alloc_flat *f, size_t nb) {
  uint64_t span = f->rhi >= f->rlo ? f->rhi - f->rlo : 0;
  unsigned shift = 0;
  while ((span >> shift) >= nb)
    shift++;
  return shift;
}

static size_t bucket_of(const struct pflex_alloc_flat *f, const struct buckets *bk, double r) {
  return (size_t)((bits(r) - f->rlo) >> bk->shift);
}

/* One pass: the bucket sums, and the sums of the bounds (left to right, as
 * pflex_alloc_run's). */
static void bucket_pass(const struct pflex_alloc_flat *f, struct buckets *bk, double *ret_min_w,
                        double *ret_max_w) {
  size_t nb = 16;
  while (nb < MAX_BUCKETS && 8 * nb < f->n)
    nb *= 2;
  memset(bk->h, 0, nb * sizeof *bk->h);
  memset(bk->w, 0, nb * sizeof *bk->w);
  memset(bk->cnt, 0, nb * sizeof *bk->cnt);
  bk->nb = nb;
  bk->shift = bucket_shift(f, nb);
  double min_w = 0, max_w = 0;
  bool by_ratio = f->strategy != PFLEX_ALLOC_OPTIMAL;
  for (size_t i = 0; i < f->n; i++) {
    min_w += f->lo[i];
    max_w += f->hi[i];
    if (by_ratio && f->w[i] > 0) {
      size_t b = bucket_of(f, bk, f->r[i]);
      bk->h[b] += f->hi[i] - f->lo[i];
      bk->w[b] += f->w[i];
      bk->cnt[b]++;
    }
  }
  bk->wsuf[nb] = 0;
  for (size_t b = nb; b-- > 0;)
    bk->wsuf[b] = bk->wsuf[b + 1] + bk->w[b];
  *ret_min_w = min_w;
  *ret_max_w = max_w;
}

/* The level lies in one bucket: the first whose lowest ratio r already
 * fails the clipping test (r * weight at or above r + headroom below r >
 * cut; the test's left side grows with r), less one. Every job below that
 * bucket is clipped, none above it. *ret_hbelow: the headroom below it. */
static size_t level_bucket(const struct pflex_alloc_flat *f, const struct buckets *bk, double cut,
                           double *ret_hbelow) {
  double hb = 0, hprev = 0;
  for (size_t b = 0; b < bk->nb; b++) {
    double r = from_bits(f->rlo + ((uint64_t)b << bk->shift));
    if (bk->cnt[b] && r * bk->wsuf[b] + hb > cut) {
      *ret_hbelow = hprev;
      return b;
    }
    if (bk->cnt[b]) hprev = hb;
    hb += bk->h[b];
  }
  *ret_hbelow = hprev;
  return bk->nb;
}

/* The clipping threshold: a job with a weight is clipped when its ratio is
 * at most *ret_thr (-1: none). *ret_rest: the cut left for the jobs not
 * clipped, *ret_wr their weight. */
static int find_level(const struct pflex_alloc_flat *f, const struct buckets *bk, double cut,
                      double *ret_thr, double *ret_rest, double *ret_wr) {
  double hbelow;
  size_t e = level_bucket(f, bk, cut, &hbelow), b = e;
  /* The undecided bucket: the last non-empty one before e. */
  while (b > 0 && !bk->cnt[b - 1])
    b--;
  if (b == 0) { /* nothing clipped */
    *ret_thr = -1, *ret_rest = cut, *ret_wr = bk->wsuf[0];
    return 0;
  }
  b--;
  struct pflex__wf_job *sub = malloc(bk->cnt[b] * sizeof *sub);
  if (!sub) return -ENOMEM;
  size_t m = 0;
  for (size_t i = 0; i < f->n; i++)
    if (bucket_of(f, bk, f->r[i]) == b && f->w[i] > 0) /* r first: w read for few */
      sub[m++] = (struct pflex__wf_job){f->r[i], f->hi[i] - f->lo[i], f->w[i], i};
  double hacc, wacc;
  size_t nclip = pflex__alloc_wf_clip(sub, m, bk->wsuf[b], cut - hbelow, &hacc, &wacc);
  uint64_t start = f->rlo + ((uint64_t)b << bk->shift);
  double thr = start > 0 ? from_bits(start - 1) : -1; /* everything below the bucket */
  double wr = bk->wsuf[b + 1];
  for (size_t k = 0; k < nclip; k++)
    thr = pflex__flat_fmax(thr, sub[k].ratio);
  for (size_t k = nclip; k < m; k++)
    wr += sub[k].w;
  free(sub);
  *ret_thr = thr, *ret_rest = cut - (hbelow + hacc), *ret_wr = wr;
  return 0;
}

/* v < lo ? lo : v > hi ? hi : v, value for value (NaN included), written
 * so that the compiler selects (minsd, a compare and a blend) instead of
 * branching: in the caps pass a branch on the power mispredicts. */
static inline double clamp(double v, double lo, double hi) {
  double t = v > hi ? hi : v;
  return v < lo ? lo : t;
}

/* Job i's per-GPU cap for power x, as pflex_curve_cap_for_power (or,
 * without a curve, as pflex_alloc_run), operation for operation. The knot
 * search counts the inner knots below x (they are sorted: the first one
 * at or above x, as the curve's walk finds it) without a branch on x. */
static inline double cap_of(const struct pflex_alloc_flat *f, size_t i, double x) {
  const double *k = &f->rec.v[f->rec.off[i]];
  double cap_min = k[0], cap_max = k[1], v;
  uint32_t nk = f->nk[i];
  k += 2 * REC_HEAD;
  if (!nk) {
    if (k[3] != 0)
      return x >= k[1] ? cap_max : pflex__flat_fmin(pflex__flat_fmax(x / k[2], cap_min), cap_max);
    x = clamp(x, k[0], k[1]);
    v = x >= k[1] ? cap_max : x / k[2];
  } else if (nk == 1) {
    v = k[1];
  } else {
    x = clamp(x, k[0], k[2 * (nk - 1)]);
    size_t j = 1;
    if (nk <= SHORT_KNOTS) /* a fixed count of steps; past the knots (the pool's slack) masked */
      for (uint32_t m = 1; m + 2 <= SHORT_KNOTS; m++)
        j += (size_t)((m + 1 < nk) & (k[2 * m] < x));
    else
      for (uint32_t m = 1; m + 1 < nk; m++)
        j += k[2 * m] < x;
    double t = (x - k[2 * (j - 1)]) / (k[2 * j] - k[2 * (j - 1)]);
    v = k[2 * (j - 1) + 1] + t * (k[2 * j + 1] - k[2 * (j - 1) + 1]);
  }
  return clamp(v, cap_min, cap_max);
}

static void caps(const struct pflex_alloc_flat *f, const double *p, double *cap) {
  for (size_t i = 0; i < f->n; i++)
    cap[i] = cap_of(f, i, p[i]);
}

/* The powers: clipped jobs at their lower bound, the others cut by weight
 * (by headroom when none of them has a weight), as alloc.c's wf_spread.
 * Their sum, left to right. The caps come in a pass of their own (settle),
 * after the rounding guard: computed here, they were computed again
 * whenever the guard moved a power (about every other run). */
static double spread(const struct pflex_alloc_flat *f, double thr, double rest, double wr,
                     double *p) {
  double hr = 0, total = 0;
  if (!(wr > 0))
    for (size_t i = 0; i < f->n; i++)
      if (!(f->w[i] > 0 && f->r[i] <= thr)) hr += f->hi[i] - f->lo[i];
  for (size_t i = 0; i < f->n; i++) {
    double w = f->w[i], h = f->hi[i] - f->lo[i];
    double share = !(rest > 0) ? 0 : wr > 0 ? rest * (w / wr) : (hr > 0 ? rest * (h / hr) : 0);
    double cut = f->hi[i] - pflex__flat_fmin(share, h);
    p[i] = ((w > 0) & (f->r[i] <= thr)) ? f->lo[i] : cut; /* no branch: clipping is data */
    total += p[i];
  }
  return total;
}

/* Job i's segments (pairs slope, length) in the pool. */
static const double *segs_of(const struct pflex_alloc_flat *f, size_t i) {
  return &f->rec.v[f->rec.off[i] + 2 * (REC_HEAD + (f->nk[i] ? f->nk[i] : REC_NOKNOTS))];
}

/* The slopes of job i's segments are s[2k], their lengths s[2k + 1]. */
#define SLOPE(s, k) ((s)[2 * (k)])
#define LEN(s, k) ((s)[2 * (k) + 1])

/* Selects within the one bucket the threshold falls in (as
 * pflex__alloc_threshold over every segment, up to rounding in the sums):
 * the bucket's segments, the budget left above it. */
static int bucket_select(const struct pflex_alloc_flat *f, unsigned shift, size_t b, size_t cnt,
                         double budget, double *ret_lambda) {
  struct pflex__seg *sub = malloc((cnt ? cnt : 1) * sizeof *sub);
  if (!sub) return -ENOMEM;
  size_t m = 0;
  double least = INFINITY;
  for (size_t i = 0; i < f->n; i++) {
    const double *s = segs_of(f, i);
    for (uint32_t k = 0; k < f->ns[i]; k++) {
      size_t bk = (size_t)((bits(SLOPE(s, k)) - f->rlo) >> shift);
      if (bk < b) break; /* the slopes fall: none further on is in b */
      if (bk == b) {
        sub[m++] = (struct pflex__seg){SLOPE(s, k), LEN(s, k)};
        least = pflex__flat_fmin(least, SLOPE(s, k));
      }
    }
  }
  double lambda = pflex__alloc_threshold(sub, m, budget);
  /* Rounding may leave the bucket's sum here just short of what its total
   * said: then the budget is reached at its last (least steep) segment. */
  *ret_lambda = lambda == -INFINITY ? least : lambda;
  free(sub);
  return 0;
}

/* The threshold slope of the flat hulls for budget: the segments bucketed
 * by the bits of their slopes (ordered as the slopes), the buckets walked
 * from the steepest down to the one where the cumulative length reaches
 * budget, the selection within it. -INFINITY when all are shorter (or
 * budget <= 0, as pflex__alloc_threshold). */
static int flat_threshold(const struct pflex_alloc_flat *f, double budget, double *ret_lambda) {
  *ret_lambda = -INFINITY;
  if (!(budget > 0) || f->rlo > f->rhi) return 0;
  size_t nb = MAX_BUCKETS;
  double *len = calloc(nb, sizeof *len);
  size_t *cnt = calloc(nb, sizeof *cnt);
  int err = len && cnt ? 0 : -ENOMEM;
  unsigned shift = bucket_shift(f, nb);
  for (size_t i = 0; !err && i < f->n; i++) {
    const double *s = segs_of(f, i);
    for (uint32_t k = 0; k < f->ns[i]; k++) {
      size_t b = (size_t)((bits(SLOPE(s, k)) - f->rlo) >> shift);
      len[b] += LEN(s, k);
      cnt[b]++;
    }
  }
  double above = 0;
  for (size_t b = nb; !err && b-- > 0;) {
    if (cnt[b] && above + len[b] >= budget) {
      err = bucket_select(f, shift, b, cnt[b], budget - above, ret_lambda);
      break;
    }
    above += len[b];
  }
  free(len);
  free(cnt);
  return err;
}

/* Job i's pieces and their number. */
static const double *pieces_of(const struct pflex_alloc_flat *f, size_t i) {
  return &f->pc.v[f->pc.off[i]];
}

static size_t npieces(const struct pflex_alloc_flat *f, size_t i) {
  return f->pc.len[i] ? (f->pc.len[i] - 1) / PFLEX__FLAT_PIECE : 0;
}

/* The segments a pass found in a bracket of slopes [lo, hi] (each job's
 * in job order, with its job), the length of those steeper than it
 * (above) and in it (inb). */
struct found {
  struct pflex__seg *seg;
  size_t *job, n, cap;
  double above, inb;
};

static int found_push(struct found *c, const double *s, size_t i) {
  if (c->n == c->cap) {
    size_t nc = c->cap ? 2 * c->cap : 1024;
    struct pflex__seg *ns = realloc(c->seg, nc * sizeof *ns);
    if (ns) c->seg = ns;
    size_t *nj = ns ? realloc(c->job, nc * sizeof *nj) : NULL;
    if (!nj) return -ENOMEM;
    c->job = nj, c->cap = nc;
  }
  c->seg[c->n] = (struct pflex__seg){s[0], s[1]};
  c->job[c->n++] = i;
  return 0;
}

/* What a run needs besides its results, kept in the flat for the next run:
 * the level search's buckets; optimal's greedy powers, brackets and the
 * polish's piece copies (9 doubles a job, in buf), the segments found in
 * the bracket and the selection's copy of them (sel). Allocated afresh,
 * optimal's 80 MB at 10^6 jobs were page-faulted in every run, which on
 * this bench's virtual machine cost more than the run itself (bench/README.md,
 * tenth wave). A run takes it from the flat and puts it back (an atomic
 * exchange: concurrent runs on one flat each get their own, one is kept). */
struct scratch {
  struct buckets bk;
  double *buf;
  size_t nbuf;
  struct found c;
  struct pflex__seg *sel;
  size_t nsel;
};

static void scratch_free(struct scratch *s) {
  if (!s) return;
  free(s->buf), free(s->c.seg), free(s->c.job), free(s->sel);
  free(s);
}

static struct scratch *scratch_take(const struct pflex_alloc_flat *f) {
  /* The flat was allocated writable (pflex_alloc_flat_new); the scratch is
   * no part of what a run reads. */
  struct scratch *s = atomic_exchange(&((struct pflex_alloc_flat *)f)->spare, NULL);
  return s ? s : calloc(1, sizeof *s);
}

static void scratch_give(const struct pflex_alloc_flat *f, struct scratch *s) {
  scratch_free(atomic_exchange(&((struct pflex_alloc_flat *)f)->spare, s));
}

/* Room for n doubles in *buf (held: *cap); its contents are not kept. */
static int room(double **buf, size_t *cap, size_t n) {
  if (n <= *cap) return 0;
  free(*buf);
  *buf = pflex__hugepage_malloc(n, sizeof **buf);
  *cap = *buf ? n : 0;
  return *buf ? 0 : -ENOMEM;
}

/* Job i at threshold slope lambda: its lower bound plus its segments
 * steeper than lambda (the greedy's first pass); with a and b its
 * bracket, the hull vertices before and after the one they reach. */
static double steeper(const struct pflex_alloc_flat *f, size_t i, double lambda, double *a,
                      double *b) {
  const double *s = segs_of(f, i);
  double q = f->lo[i], prev = q;
  uint32_t k = 0;
  for (; k < f->ns[i] && SLOPE(s, k) > lambda; k++)
    prev = q, q += LEN(s, k);
  if (a) a[i] = prev, b[i] = k < f->ns[i] ? q + LEN(s, k) : q;
  return q;
}

/* The greedy's first pass for every threshold slope in [lo, hi] at once:
 * each job's power and bracket as for a slope just below hi (p clamped to
 * its bounds), and into c the segments in the bracket, which decide where
 * the level lies in it. One pass over the segments. */
static int bracket_pass(const struct pflex_alloc_flat *f, double lo, double hi, double *p,
                        double *a, double *b, struct found *c) {
  double above = 0, inb = 0;
  for (size_t i = 0; i < f->n; i++) {
    const double *s = segs_of(f, i);
    if (i + AHEAD < f->n) PREFETCH(segs_of(f, i + AHEAD));
    double q = f->lo[i], prev = q;
    uint32_t k = 0, ns = f->ns[i];
    for (; k < ns && SLOPE(s, k) > hi; k++)
      prev = q, q += LEN(s, k), above += LEN(s, k);
    p[i] = pflex__flat_fmin(q, f->hi[i]);
    if (a) a[i] = prev, b[i] = k < ns ? q + LEN(s, k) : q;
    for (; k < ns && SLOPE(s, k) >= lo; k++) {
      if (found_push(c, &s[2 * k], i) < 0) return -ENOMEM;
      inb += LEN(s, k);
    }
  }
  c->above = above, c->inb = inb;
  return 0;
}

/* The greedy pass of alloc.c's greedy() on the sampled hulls at threshold
 * slope lambda inside the bracket of c (every segment steeper, segments at
 * it sharing what is left in job order, then power no hull turns into
 * throughput up to P_max in job order), after bracket_pass: only the jobs
 * with segments in the bracket change. Without its refinement pass, its
 * repair and the local search, which evaluate the curves. */
static void greedy_finish(const struct pflex_alloc_flat *f, const struct found *c, double lambda,
                          double budget, double *p, double *a, double *b) {
  double left = budget - c->above;
  for (size_t m = 0; m < c->n;) {
    size_t i = c->job[m];
    p[i] = steeper(f, i, lambda, a, b);
    for (; m < c->n && c->job[m] == i; m++)
      if (c->seg[m].slope > lambda) left -= c->seg[m].dp;
  }
  for (size_t m = 0; m < c->n && left > 0; m++)
    if (c->seg[m].slope == lambda) {
      double take = pflex__flat_fmin(c->seg[m].dp, left);
      p[c->job[m]] += take;
      left -= take;
    }
  for (size_t m = 0; m < c->n; m++)
    p[c->job[m]] =
        pflex__flat_fmin(pflex__flat_fmax(p[c->job[m]], f->lo[c->job[m]]), f->hi[c->job[m]]);
  for (size_t i = 0; i < f->n && left > 0; i++) {
    double take = pflex__flat_fmin(f->hi[i] - p[i], left);
    if (take > 0) p[i] = pflex__flat_fmin(p[i] + take, f->hi[i]), left -= take;
  }
}

/* The bucket (of MAX_BUCKETS over the slope bits from lo by shift) in
 * which the cumulative length of hist, from the steepest bucket down,
 * reaches budget; *ret_above the length above it. -1 where it does not. */
static ptrdiff_t level_in(const double *len, double budget, double *ret_above) {
  double above = 0;
  for (ptrdiff_t b = MAX_BUCKETS; b-- > 0;) {
    if (above + len[b] >= budget) {
      *ret_above = above;
      return b;
    }
    above += len[b];
  }
  *ret_above = above;
  return -1;
}

/* The shift that maps the bits from lo to hi onto MAX_BUCKETS buckets. */
static unsigned span_shift(uint64_t lo, uint64_t hi) {
  unsigned shift = 0;
  while (((hi - lo) >> shift) >= MAX_BUCKETS)
    shift++;
  return shift;
}

/* The level among segments s[0..m) (slopes > 0) for budget, as
 * pflex__alloc_threshold, in three passes and a selection among few: the
 * lengths by slope bits, the bucket where they reach budget, its segments
 * (moved to the front of s). -INFINITY when all are shorter. */
static int seg_level(struct pflex__seg *s, size_t m, double budget, double *ret_lambda) {
  *ret_lambda = -INFINITY;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t k = 0; k < m; k++)
    lo = bits(s[k].slope) < lo ? bits(s[k].slope) : lo,
    hi = bits(s[k].slope) > hi ? bits(s[k].slope) : hi;
  if (!m || !(budget > 0)) return 0;
  double *len = calloc(MAX_BUCKETS, sizeof *len), above, least = INFINITY;
  if (!len) return -ENOMEM;
  unsigned shift = span_shift(lo, hi);
  for (size_t k = 0; k < m; k++)
    len[(bits(s[k].slope) - lo) >> shift] += s[k].dp;
  ptrdiff_t b = level_in(len, budget, &above);
  free(len);
  if (b < 0) return 0;
  size_t n = 0;
  for (size_t k = 0; k < m; k++)
    if ((ptrdiff_t)((bits(s[k].slope) - lo) >> shift) == b)
      s[n++] = s[k], least = pflex__flat_fmin(least, s[k].slope);
  double lambda = pflex__alloc_threshold(s, n, budget - above);
  /* Rounding may leave the bucket's sum just short of what it said. */
  *ret_lambda = lambda == -INFINITY ? least : lambda;
  return 0;
}

/* A bracket of slopes [*ret_lo, *ret_hi] around the level for a budget,
 * from a sample of the jobs (about SAMPLE_JOBS, evenly strided): the
 * buckets of slope bits in which the sample's share of the budget (by
 * hull length: jobs' sizes vary), SAMPLE_EPS more and less, is reached.
 * NAN when there is no sample (few jobs). */
static int sample_bracket(const struct pflex_alloc_flat *f, double budget, double *ret_lo,
                          double *ret_hi) {
  *ret_lo = *ret_hi = NAN;
  if (f->n < SAMPLED_JOBS || f->rlo > f->rhi) return 0;
  size_t stride = f->n / SAMPLE_JOBS;
  double part = 0, all = 0, above;
  double *len = calloc(MAX_BUCKETS, sizeof *len);
  if (!len) return -ENOMEM;
  unsigned shift = span_shift(f->rlo, f->rhi);
  for (size_t i = 0; i < f->n; i++)
    all += f->ns[i] ? f->hi[i] - f->lo[i] : 0;
  for (size_t i = 0; i < f->n; i += stride) {
    const double *g = segs_of(f, i);
    part += f->ns[i] ? f->hi[i] - f->lo[i] : 0;
    for (uint32_t k = 0; k < f->ns[i]; k++)
      len[(bits(SLOPE(g, k)) - f->rlo) >> shift] += LEN(g, k);
  }
  double share = all > 0 ? budget * part / all : 0;
  ptrdiff_t top = level_in(len, share * (1 - SAMPLE_EPS), &above);
  ptrdiff_t bottom = level_in(len, share * (1 + SAMPLE_EPS), &above);
  free(len);
  /* The bucket's ends: a slope in bucket b has bits from rlo + (b << shift) on. */
  *ret_hi = top < 0 || top + 1 >= MAX_BUCKETS ? INFINITY
                                              : from_bits(f->rlo + ((uint64_t)(top + 1) << shift));
  *ret_lo = bottom < 0 ? 0 : from_bits(f->rlo + ((uint64_t)bottom << shift));
  return 0;
}

/* The greedy on the flat hulls for budget: its powers into p, with a and b
 * each job's bracket; *ret_lambda the threshold slope. The level is
 * searched in a bracket of slopes found from a sample, checked by the pass
 * that gives the greedy's powers (one pass over the segments); where the
 * sample missed it, from every segment (flat_threshold, two passes more). */
static int greedy(const struct pflex_alloc_flat *f, struct scratch *sc, double budget, double *p,
                  double *a, double *b, double *ret_lambda) {
  struct found *c = &sc->c;
  double lo = NAN, hi = NAN, lambda = NAN;
  int err = budget > 0 ? sample_bracket(f, budget, &lo, &hi) : 0;
  c->n = 0;
  if (!err && !isnan(lo) && !(err = bracket_pass(f, lo, hi, p, a, b, c)) && c->above < budget &&
      c->above + c->inb >= budget) {
    if (c->n > sc->nsel) { /* the selection's copy: it reorders the segments */
      free(sc->sel);
      sc->sel = malloc(c->n * sizeof *sc->sel);
      sc->nsel = sc->sel ? c->n : 0;
    }
    err = sc->sel || !c->n ? 0 : -ENOMEM;
    if (!err) memcpy(sc->sel, c->seg, c->n * sizeof *sc->sel);
    if (!err) err = seg_level(sc->sel, c->n, budget - c->above, &lambda);
    if (lambda == -INFINITY) lambda = NAN; /* rounding: the full search */
  }
  if (!err && isnan(lambda)) { /* no sample, or it missed the level */
    c->n = 0;
    err = flat_threshold(f, budget, &lambda);
    if (!err) err = bracket_pass(f, lambda, lambda, p, a, b, c);
  }
  if (!err) greedy_finish(f, c, lambda, budget, p, a, b);
  *ret_lambda = lambda;
  return err;
}

/* Scratch of the polish: the greedy powers, brackets, and per job the
 * piece its power lies on, its y0 replaced by the start of its part of the
 * bracket (pflex__flat_polish_piece does not read y0), then the part's end
 * (LOC doubles; x0 NAN: the job keeps its greedy power). */
#define LOC (PFLEX__FLAT_PIECE + 1)
struct polish {
  double *pg, *a, *b, *loc;
};

/* The first pass at lambda: every job with pieces at the best power on
 * its bracket for w f - lambda x (pflex__flat_polish) where it takes it,
 * the others at their greedy power; each polished job's piece into
 * w->loc. The sum of the powers; *ret_d its derivative
 * in lambda. */
static double polish_first(const struct pflex_alloc_flat *f, const struct polish *w, double lambda,
                           double *p, double *ret_d) {
  double sum = 0, d = 0;
  for (size_t i = 0; i < f->n; i++) {
    double q = NAN, dq = 0, *loc = &w->loc[LOC * i];
    size_t k = 0;
    double range[2];
    if (i + AHEAD < f->n) PREFETCH(pieces_of(f, i + AHEAD));
    if (npieces(f, i))
      q = pflex__flat_polish(pieces_of(f, i), npieces(f, i), f->w[i], lambda, w->a[i], w->b[i],
                             w->pg[i], &k, range, &dq);
    /* Moved on where it gains: a meeting point moves on with lambda, an
     * end (across a hull bridge) stays. */
    bool use = !isnan(q) && q != w->pg[i];
    p[i] = use ? pflex__flat_fmin(pflex__flat_fmax(q, f->lo[i]), f->hi[i]) : w->pg[i];
    loc[0] = NAN;
    if (use && dq < 0) {
      const double *pc = &pieces_of(f, i)[PFLEX__FLAT_PIECE * k];
      memcpy(loc, pc, PFLEX__FLAT_PIECE * sizeof *loc);
      loc[1] = range[0], loc[PFLEX__FLAT_PIECE] = range[1];
    }
    sum += p[i];
    d += dq;
  }
  *ret_d = d;
  return sum;
}

/* A later pass: each polished job on the piece of the first pass. */
static double polish_next(const struct pflex_alloc_flat *f, const struct polish *w, double lambda,
                          double *p, double *ret_d) {
  double sum = 0, d = 0;
  for (size_t i = 0; i < f->n; i++) {
    const double *loc = &w->loc[LOC * i];
    double dq = 0;
    if (!isnan(loc[0])) {
      double q =
          pflex__flat_polish_piece(loc, loc[1], loc[PFLEX__FLAT_PIECE], f->w[i], lambda, &dq);
      p[i] = pflex__flat_fmin(pflex__flat_fmax(q, f->lo[i]), f->hi[i]);
    }
    sum += p[i];
    d += dq;
  }
  *ret_d = d;
  return sum;
}

/* What powers p gain over the greedy's, on the pieces: the sum of
 * w (f(p) - f(pg)) over the jobs that moved. */
static double gain_over_greedy(const struct pflex_alloc_flat *f, const struct polish *w,
                               const double *p) {
  double g = 0;
  for (size_t i = 0; i < f->n; i++)
    if (p[i] != w->pg[i])
      g += f->w[i] * (pflex__flat_value(pieces_of(f, i), npieces(f, i), p[i]) -
                      pflex__flat_value(pieces_of(f, i), npieces(f, i), w->pg[i]));
  return g;
}

/* Newton steps on lambda after a first pass at lambda (sum, d), each
 * moving the jobs on the pieces that pass found (polish_next; the others
 * keep their powers), until the sum is within POLISH_TOL of the target or
 * POLISH_PASSES passes in all: the last sum. */
static double newton(const struct pflex_alloc_flat *f, const struct polish *w, double lambda,
                     double sum, double d, double target, double *p) {
  for (int it = 1; it < POLISH_PASSES && fabs(sum - target) > POLISH_TOL * target && d < 0; it++) {
    lambda =
        pflex__flat_fmin(pflex__flat_fmax(lambda - (sum - target) / d, 0.5 * lambda), 2 * lambda);
    sum = polish_next(f, w, lambda, p, &d);
  }
  return sum;
}

/* Up to this many jobs, the power the polish left unused goes to the job
 * that gains the most per watt from it first; beyond, in job order. */
#define FILL_JOBS 64

/* The power the polish left unused (target less the powers' sum: jobs
 * that jumped across a bridge) to jobs with headroom up to their upper
 * bounds, as the greedy hands out what no hull turns into throughput. */
static void fill_left(const struct pflex_alloc_flat *f, double target, double *p) {
  double left = target;
  size_t from = 0; /* in job order, the jobs before it are full */
  for (size_t i = 0; i < f->n; i++)
    left -= p[i];
  while (left > POLISH_TOL * target) {
    size_t best = SIZE_MAX;
    double rate = -INFINITY;
    for (size_t i = from; i < f->n && (best == SIZE_MAX || f->n <= FILL_JOBS); i++) {
      double space = pflex__flat_fmin(f->hi[i] - p[i], left), r = 0;
      if (!(space > 0)) continue;
      if (npieces(f, i))
        r = f->w[i] *
            (pflex__flat_value(pieces_of(f, i), npieces(f, i), p[i] + space) -
             pflex__flat_value(pieces_of(f, i), npieces(f, i), p[i])) /
            space;
      if (r > rate) rate = r, best = i;
    }
    if (best == SIZE_MAX) return;
    from = f->n > FILL_JOBS ? best : 0;
    double take = pflex__flat_fmin(f->hi[best] - p[best], left);
    p[best] = pflex__flat_fmin(p[best] + take, f->hi[best]);
    left -= take;
  }
}

/* When the Newton steps do not reach the target (a few jobs, some moving
 * across hull bridges): bisection on lambda with full passes, to the least
 * lambda found whose powers fit; there a job that jumps across a bridge
 * between the bracket's ends leaves power unused, which Newton steps give
 * to the jobs on concave parts, the jumpers held (back to the bisection's
 * powers where they overshoot). Kept where they gain over the greedy's. */
static void polish_bisect(const struct pflex_alloc_flat *f, const struct polish *w, double lambda,
                          double target, double *p) {
  double lo = 0, hi = 8 * lambda, d;
  int steps = f->n <= 4096 ? 40 : 12;
  if (polish_first(f, w, hi, p, &d) <= target) {
    for (int it = 0; it < steps; it++) {
      double mid = 0.5 * (lo + hi);
      *(polish_first(f, w, mid, p, &d) > target ? &lo : &hi) = mid;
    }
    double sum = polish_first(f, w, hi, p, &d);
    if (newton(f, w, hi, sum, d, target, p) > target * (1 + POLISH_TOL))
      polish_first(f, w, hi, p, &d);
    fill_left(f, target, p);
    if (gain_over_greedy(f, w, p) > 0) return;
  }
  memcpy(p, w->pg, f->n * sizeof *p);
}

/* Polish passes: lambda moved by Newton steps until the powers sum to the
 * target (within POLISH_TOL of it); else polish_bisect. Up to CHECKED_JOBS
 * jobs, where a few jobs moving across hull bridges can outweigh the
 * others' gains, the answer is kept only where it gains over the greedy's
 * (a pass that costs as much as the polish's first). */
static void polish(const struct pflex_alloc_flat *f, const struct polish *w, double lambda,
                   double target, double *p) {
  double d, sum = polish_first(f, w, lambda, p, &d);
  sum = newton(f, w, lambda, sum, d, target, p);
  if (!(fabs(sum - target) <= POLISH_TOL * target))
    polish_bisect(f, w, lambda, target, p);
  else if (f->n <= CHECKED_JOBS && !(gain_over_greedy(f, w, p) >= 0)) /* jumps across bridges */
    memcpy(p, w->pg, f->n * sizeof *p);
}

/* Few jobs: pair moves on their pieces after the polish
 * (pflex__flat_pair_search), where two jobs on hull bridges leave the
 * greedy's answer far from the optimum (1.1e-2 below it on two jobs, before
 * this). */
static void pair_search(const struct pflex_alloc_flat *f, double *p) {
  const double *pc[PFLEX_ALLOC_FLAT_OPT_TOL_JOBS];
  size_t npc[PFLEX_ALLOC_FLAT_OPT_TOL_JOBS];
  for (size_t i = 0; i < f->n; i++) {
    npc[i] = npieces(f, i);
    pc[i] = npc[i] ? pieces_of(f, i) : NULL;
  }
  struct pflex__flat_jobs s = {f->n, pc, npc, f->w, f->lo, f->hi};
  pflex__flat_pair_search(&s, p);
}

/* optimal on the flat: the greedy on the sampled hulls, then each job
 * whose curve has pieces polished on them (polish), for budget above the
 * lower bounds (target in all). */
static int run_optimal(const struct pflex_alloc_flat *f, struct scratch *sc, double budget,
                       double target, double *p) {
  double lambda;
  struct polish w = {0};
  if (f->pc.live) {
    if (room(&sc->buf, &sc->nbuf, (3 + LOC) * f->n) < 0) return -ENOMEM;
    w = (struct polish){sc->buf, sc->buf + f->n, sc->buf + 2 * f->n, sc->buf + 3 * f->n};
  }
  int err = greedy(f, sc, budget, w.pg ? w.pg : p, w.a, w.b, &lambda);
  if (!err && w.pg) {
    if (lambda > 0 && isfinite(lambda))
      polish(f, &w, lambda, target, p);
    else
      memcpy(p, w.pg, f->n * sizeof *p); /* nothing to polish */
    if (f->n < PFLEX_ALLOC_FLAT_OPT_TOL_JOBS) pair_search(f, p);
  }
  return err;
}

/* The powers' sum (sum: already taken, as spread takes it; NAN: not yet)
 * after the rounding guard (a sum a few ulps over the target moves
 * powers), then their caps: the one pass that reads the job records. */
static double settle(const struct pflex_alloc_flat *f, double target, double sum, double *p,
                     double *cap) {
  if (isnan(sum)) {
    sum = 0;
    for (size_t i = 0; i < f->n; i++)
      sum += p[i];
  }
  if (sum > target) {
    pflex__alloc_enforce_target(p, f->lo, 1, f->n, target);
    sum = 0;
    for (size_t i = 0; i < f->n; i++)
      sum += p[i];
  }
  if (cap) caps(f, p, cap);
  return sum;
}

int pflex_alloc_flat_run(const struct pflex_alloc_flat *f, double target_w, double *power_w,
                         double *cap_w, struct pflex_alloc_summary *summary) {
  if (!f || !power_w || isnan(target_w)) return -EINVAL;
  struct scratch *sc = scratch_take(f);
  if (!sc) return -ENOMEM;
  struct buckets *bk = &sc->bk;
  double min_w, max_w, total = NAN;
  bucket_pass(f, bk, &min_w, &max_w);
  struct pflex_alloc_summary sum = {.target_w = target_w,
                                    .total_tput = NAN,
                                    .weighted_tput = NAN,
                                    .min_w = min_w,
                                    .max_w = max_w,
                                    .deepest_cut = max_w > 0 ? 1.0 - min_w / max_w : 0,
                                    .gap_bound = f->strategy == PFLEX_ALLOC_OPTIMAL ? NAN : 0};
  int err = 0;
  if (f->nbad || target_w < min_w) {
    err = -PFLEX_E_INFEASIBLE;
  } else if (target_w >= max_w) {
    memcpy(power_w, f->hi, f->n * sizeof *power_w);
  } else if (f->strategy == PFLEX_ALLOC_OPTIMAL) {
    err = run_optimal(f, sc, target_w - min_w, target_w, power_w);
  } else {
    double thr, rest, wr;
    if (!(err = find_level(f, bk, max_w - target_w, &thr, &rest, &wr)))
      total = spread(f, thr, rest, wr, power_w);
  }
  scratch_give(f, sc);
  if (err && err != -PFLEX_E_INFEASIBLE) return err;
  if (!err) sum.total_w = settle(f, target_w, total, power_w, cap_w);
  if (summary) *summary = sum;
  return err;
}
