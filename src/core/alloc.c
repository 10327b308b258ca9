/* Power allocation strategies (include/pflex/alloc.h): proportional cuts with
 * clipping and redistribution (water filling), and the optimum of total
 * weighted throughput by a greedy over the upper concave hulls of the
 * piecewise-linear curves. Method and guarantees: docs/allocation.md. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/hugepage.h"
#include "core/alloc_internal.h"
#include "pflex/alloc.h"
#include "pflex/error.h"

static const char *const names[PFLEX_ALLOC_NSTRATEGIES] = {
    [PFLEX_ALLOC_EQUAL] = "equal",     [PFLEX_ALLOC_MOE_FT] = "moe-ft",
    [PFLEX_ALLOC_DRAM] = "dram",       [PFLEX_ALLOC_PFI] = "pfi",
    [PFLEX_ALLOC_OPTIMAL] = "optimal", [PFLEX_ALLOC_ORACLE] = "oracle",
};

const char *pflex_alloc_strategy_name(enum pflex_alloc_strategy s) {
  return (unsigned)s < PFLEX_ALLOC_NSTRATEGIES ? names[s] : "unknown";
}

int pflex_alloc_strategy_parse(const char *name, enum pflex_alloc_strategy *ret) {
  for (unsigned i = 0; name && i < PFLEX_ALLOC_NSTRATEGIES; i++)
    if (strcmp(name, names[i]) == 0) {
      *ret = (enum pflex_alloc_strategy)i;
      return 0;
    }
  return -EINVAL;
}

void pflex_alloc_job_init(struct pflex_alloc_job *job) {
  memset(job, 0, sizeof *job);
  job->weight = 1.0;
  job->gpus = 1;
}

/* ---- proportional strategies ------------------------------------------------ */

/* pfi's weight of job j, its T_max known (p->tmax). */
static int pfi_weight(const struct pflex_alloc_job *j, const struct pflex__prep *p, double *ret_w) {
  if (isnan(j->pfi) || !(p->tmax > 0) || !isfinite(p->tmax)) return -EINVAL;
  *ret_w = p->hi / p->tmax * (j->pfi > 0 ? pflex__fmin(j->pfi, 1e12) : 0.0);
  return 0;
}

int pflex__alloc_share_weight(const struct pflex_alloc_job *j, struct pflex__prep *p,
                              enum pflex_alloc_strategy s, double *ret_w) {
  switch (s) {
  case PFLEX_ALLOC_EQUAL: *ret_w = p->hi; return 0;
  case PFLEX_ALLOC_MOE_FT:
    *ret_w = p->hi * (j->arch == PFLEX_ARCH_MOE && j->task == PFLEX_TASK_FT ? 2.0 : 1.0);
    return 0;
  case PFLEX_ALLOC_DRAM:
    if (!(j->dram_copy >= 0) || !isfinite(j->dram_copy)) return -EINVAL;
    *ret_w = j->dram_copy;
    return 0;
  case PFLEX_ALLOC_PFI:
    if (!(j->t_max > 0) && j->curve) p->tmax = pflex_curve_eval(j->curve, p->hi);
    return pfi_weight(j, p, ret_w);
  default: return -EINVAL;
  }
}

#define TMAX_MEMO 64
static int share_weights(const struct pflex_alloc_job *jobs, size_t n, struct pflex__prep *pr,
                         enum pflex_alloc_strategy s, double *w) {
  /* pfi reads each job's T_max at its P_max: a job with the curve and P_max
   * of the last one seen (direct-mapped on the curve) and no T_max of its
   * own takes that one's value instead of evaluating the curve again. */
  size_t memo[TMAX_MEMO];
  for (size_t k = 0; k < TMAX_MEMO && s == PFLEX_ALLOC_PFI; k++)
    memo[k] = SIZE_MAX;
  for (size_t i = 0; i < n; i++) {
    const struct pflex_alloc_job *j = &jobs[i];
    int err;
    if (s == PFLEX_ALLOC_PFI && !(j->t_max > 0) && j->curve) {
      size_t k = (size_t)(pflex__alloc_mix(0, (uint64_t)(uintptr_t)j->curve) >> 58), o = memo[k];
      if (o < i && jobs[o].curve == j->curve && pr[o].hi == pr[i].hi) {
        pr[i].tmax = pr[o].tmax;
        err = pfi_weight(j, &pr[i], &w[i]);
      } else {
        memo[k] = i;
        err = pflex__alloc_share_weight(j, &pr[i], s, &w[i]);
      }
    } else {
      err = pflex__alloc_share_weight(j, &pr[i], s, &w[i]);
    }
    if (err) return err;
  }
  return 0;
}

/* Takes `cut` W from the jobs, job i's share proportional to w[i] but at most
 * its headroom h[i]; clipped shares go to the others (water filling). In order
 * of headroom per weight, a job is clipped exactly when its ratio is at most
 * the level lambda = remaining cut / remaining weight left by the jobs before
 * it; once one is not clipped, no later one is (clipping a job whose ratio is
 * below the level only raises the level). So the clipped set is a prefix of
 * that order, found here by a quickselect on the ratio instead of a sort:
 * expected linear time. */
/* A job in the selection is a struct pflex__wf_job (alloc_internal.h): an
 * index into the jobs would miss the cache on every step at a million
 * jobs; same values, same order, same sums as reading them through it. */

/* Puts every job at its upper bound and gathers the jobs with a weight into
 * job (zero-weight jobs are cut only when nothing else is left): their
 * number; *ret_wsum their total weight. */
static size_t wf_gather(const struct pflex__prep *pr, const double *w, size_t n, double *p,
                        struct pflex__wf_job *job, double *ret_wsum) {
  size_t m = 0;
  double wsum = 0;
  for (size_t i = 0; i < n; i++) {
    p[i] = pr[i].hi;
    if (w[i] > 0) {
      double h = pr[i].hi - pr[i].lo;
      job[m++] = (struct pflex__wf_job){h / w[i], h, w[i], i};
      wsum += w[i];
    }
  }
  *ret_wsum = wsum;
  return m;
}

static double median3(double x, double y, double z) {
  return x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
}

/* Three-way partition of job[a..b) around piv by ratio: afterwards
 * [a, *ret_lt) < piv, [*ret_lt, *ret_gt) == piv, [*ret_gt, b) > piv. */
static void wf_partition(struct pflex__wf_job *job, size_t a, size_t b, double piv, size_t *ret_lt,
                         size_t *ret_gt) {
  size_t lt = a, i = a, gt = b;
  while (i < gt) {
    struct pflex__wf_job v = job[i];
    if (v.ratio < piv) {
      job[i++] = job[lt];
      job[lt++] = v;
    } else if (v.ratio > piv) {
      job[i] = job[--gt];
      job[gt] = v;
    } else {
      i++;
    }
  }
  *ret_lt = lt;
  *ret_gt = gt;
}

/* Finds the clipped prefix of job[0..m) (in ratio order) by quickselect. */
size_t pflex__alloc_wf_clip(struct pflex__wf_job *job, size_t m, double wsum, double cut,
                            double *ret_hacc, double *ret_wacc) {
  double hacc = 0, wacc = 0; /* headroom and weight of the jobs known to be clipped */
  size_t a = 0, b = m;       /* the undecided jobs: job[a..b) */
  while (a < b) {
    double piv = median3(job[a].ratio, job[a + (b - a) / 2].ratio, job[b - 1].ratio);
    size_t lt, gt;
    wf_partition(job, a, b, piv, &lt, &gt);
    double hl = 0, wl = 0;
    for (size_t k = a; k < lt; k++) {
      hl += job[k].h;
      wl += job[k].w;
    }
    double wrest = wsum - wacc - wl;
    bool clipped = wrest > 0 && piv <= (cut - hacc - hl) / wrest;
    if (!clipped) {
      b = lt;
      continue;
    }
    /* Every job up to the pivot's ratio is clipped. */
    for (size_t k = lt; k < gt; k++) {
      hl += job[k].h;
      wl += job[k].w;
    }
    hacc += hl;
    wacc += wl;
    a = gt;
  }
  *ret_hacc = hacc;
  *ret_wacc = wacc;
  return a;
}

/* Takes `rest` W from the jobs not clipped, by weight (by headroom when all
 * their weights are zero, e.g. no DRAM activity). */
static void wf_spread(const struct pflex__prep *pr, const double *w, size_t n, const bool *clip,
                      double rest, double *p) {
  /* Recomputed, not carried, so rounding cannot leave a phantom weight. */
  double wr = 0, hr = 0;
  for (size_t i = 0; i < n; i++)
    if (!clip[i]) {
      wr += w[i];
      hr += pr[i].hi - pr[i].lo;
    }
  for (size_t i = 0; i < n; i++) {
    if (clip[i]) continue;
    double h = pr[i].hi - pr[i].lo;
    double share = wr > 0 ? rest * (w[i] / wr) : (hr > 0 ? rest * (h / hr) : 0);
    p[i] = pr[i].hi - pflex__fmin(share, h);
  }
}

static int water_fill(const struct pflex__prep *pr, const double *w, size_t n, double cut,
                      double *p) {
  struct pflex__wf_job *job = pflex__hugepage_malloc(n ? n : 1, sizeof *job);
  bool *clip = pflex__hugepage_calloc(n ? n : 1, sizeof *clip);
  if (!job || !clip) {
    free(job);
    free(clip);
    return -ENOMEM;
  }
  double wsum;
  size_t m = wf_gather(pr, w, n, p, job, &wsum);
  double hacc, wacc;
  size_t nclip = pflex__alloc_wf_clip(job, m, wsum, cut, &hacc, &wacc);
  for (size_t k = 0; k < nclip; k++) {
    p[job[k].i] = pr[job[k].i].lo;
    clip[job[k].i] = true;
  }
  double rest = cut - hacc;
  if (rest > 0) wf_spread(pr, w, n, clip, rest, p);
  free(job);
  free(clip);
  return 0;
}

/* ---- optimal -------------------------------------------------------------------- */

struct cand {
  double slope, dp;
  size_t job;
};

/* Whether x comes before y in order of decreasing slope, ties by job (a
 * strict total order: jobs differ); `asc` reverses it. */
static bool cand_before(const struct cand *x, const struct cand *y, bool asc) {
  bool desc = x->slope != y->slope ? x->slope > y->slope : x->job < y->job;
  return asc ? !desc : desc;
}

/* Moves the first of c[k..nc) in that order to c[k]. The repair walks the
 * candidates in order only until the power is placed, usually one or two:
 * selecting them one at a time gives the order a sort would, for less. */
static void cand_select(struct cand *c, size_t k, size_t nc, bool asc) {
  size_t best = k;
  for (size_t m = k + 1; m < nc; m++)
    if (cand_before(&c[m], &c[best], asc)) best = m;
  struct cand t = c[k];
  c[k] = c[best];
  c[best] = t;
}

static double val(const struct pflex_alloc_job *j, double p) {
  return j->weight * pflex_curve_eval(j->curve, p);
}

/* Job pj ended `take` W into its hull segment pm, where a non-concave curve lies
 * below its hull. Two feasible neighbours of the greedy answer are tried and
 * the best of the three kept: (a) pj back to the segment's start, the freed
 * power to the other jobs' next segments, steepest first; (b) pj to the
 * segment's end, the power taken from the other jobs' last segments, flattest
 * first. The objective is evaluated on the curves themselves, so *ret_better
 * (>= 0) is a true improvement. */
static int repair(const struct pflex_alloc_job *jobs, size_t n, const struct pflex__seg *const *js,
                  const size_t *jn, const size_t *nfull, double *p, size_t pj, size_t pm,
                  double take, double *ret_better) {
  struct cand *c = malloc((n ? n : 1) * sizeof *c);
  double *pa = malloc((n ? n : 1) * sizeof *pa), *pb = malloc((n ? n : 1) * sizeof *pb);
  if (!c || !pa || !pb) {
    free(c);
    free(pa);
    free(pb);
    return -ENOMEM;
  }
  memcpy(pa, p, n * sizeof *p);
  memcpy(pb, p, n * sizeof *p);
  double base = val(&jobs[pj], p[pj]);
  /* (a) */
  size_t nc = 0;
  for (size_t i = 0; i < n; i++) {
    size_t k = nfull[i];
    if (i != pj && k < jn[i]) c[nc++] = (struct cand){js[i][k].slope, js[i][k].dp, i};
  }
  pa[pj] = p[pj] - take;
  double da = val(&jobs[pj], pa[pj]) - base, freed = take;
  for (size_t k = 0; k < nc && freed > 0; k++) {
    cand_select(c, k, nc, false);
    size_t i = c[k].job;
    double add = pflex__fmin(c[k].dp, freed);
    pa[i] = p[i] + add;
    freed -= add;
    da += val(&jobs[i], pa[i]) - val(&jobs[i], p[i]);
  }
  /* (b) */
  nc = 0;
  for (size_t i = 0; i < n; i++)
    if (i != pj && nfull[i] > 0) {
      size_t k = nfull[i] - 1;
      c[nc++] = (struct cand){js[i][k].slope, js[i][k].dp, i};
    }
  double need = js[pj][pm].dp - take, db = -INFINITY;
  pb[pj] = p[pj] + need;
  double acc = val(&jobs[pj], pb[pj]) - base;
  for (size_t k = 0; k < nc && need > 0; k++) {
    cand_select(c, k, nc, true);
    size_t i = c[k].job;
    double rem = pflex__fmin(c[k].dp, need);
    pb[i] = p[i] - rem;
    need -= rem;
    acc += val(&jobs[i], pb[i]) - val(&jobs[i], p[i]);
  }
  if (!(need > 0)) db = acc;
  double better = 0;
  if (da > better && da >= db) {
    better = da;
    memcpy(p, pa, n * sizeof *p);
  } else if (db > better) {
    better = db;
    memcpy(p, pb, n * sizeof *p);
  }
  free(c);
  free(pa);
  free(pb);
  *ret_better = better;
  return 0;
}

/* ---- hull cache --------------------------------------------------------------- */

/* The segments of a job's hull depend only on its curve (by digest), window,
 * weight and knots: a cache of them serves the jobs of one call that share a
 * curve, and with a pflex_alloc_ctx the calls after it. A hit returns the
 * very values a fresh sampling would compute. */
struct hull_key {
  uint64_t digest;
  double lo, hi, weight;
  unsigned knots;
  uint64_t hash; /* of the fields above (key_of), not compared */
  bool keep;     /* the context may keep it (pflex__alloc_curve_key); not compared */
};

struct hull_entry {
  struct hull_key key;
  size_t off, len; /* in pool */
  uint64_t call;   /* the last call (hull_cache.call) that used it */
  bool used;
};

/* call counts the calls of pflex_alloc_run with the context. */
struct hull_cache {
  struct hull_entry *tab;
  size_t nslots, nused;
  struct pflex__seg *pool, *spare; /* spare: the compaction's next pool */
  size_t npool, cap_pool, cap_spare;
  uint64_t call;
};

struct pflex_alloc_ctx {
  struct hull_cache hulls;
  struct pflex__oracle_cache *oracle; /* the exact oracle's majorants (alloc_oracle.c) */
};

static void hull_cache_release(struct hull_cache *hc) {
  free(hc->tab);
  free(hc->pool);
  free(hc->spare);
  memset(hc, 0, sizeof *hc);
}

static void hull_cache_clear(struct hull_cache *hc) {
  for (size_t h = 0; h < hc->nslots; h++)
    hc->tab[h].used = false;
  hc->nused = 0;
  hc->npool = 0;
}

/* The shared hash mixing (alloc_internal.h), by short names. */
static uint64_t mix(uint64_t h, uint64_t v) {
  return pflex__alloc_mix(h, v);
}

static uint64_t dbits(double x) {
  return pflex__alloc_dbits(x);
}

/* A key with its hash, computed once for the pass's table and the
 * context's: the digest is a hash already, the rest is folded in by one
 * multiply each. */
static struct hull_key key_of(uint64_t digest, double lo, double hi, double weight,
                              unsigned knots) {
  uint64_t h = digest ^ dbits(lo) * 0x9E3779B97F4A7C15ull ^ dbits(hi) * 0xC2B2AE3D27D4EB4Full ^
               dbits(weight) * 0x165667B19E3779F9ull ^ knots;
  h = (h ^ (h >> 29)) * 0xff51afd7ed558ccdull;
  return (struct hull_key){digest, lo, hi, weight, knots, h ^ (h >> 32), false};
}

static size_t key_slot(const struct hull_key *k, size_t nslots) {
  return (size_t)k->hash & (nslots - 1);
}

static bool key_eq(const struct hull_key *a, const struct hull_key *b) {
  return a->digest == b->digest && a->lo == b->lo && a->hi == b->hi && a->weight == b->weight &&
         a->knots == b->knots;
}

/* The entry for key k, or NULL. */
static struct hull_entry *hull_find(const struct hull_cache *hc, const struct hull_key *k) {
  if (!hc->nslots) return NULL;
  for (size_t h = key_slot(k, hc->nslots);; h = (h + 1) & (hc->nslots - 1)) {
    if (!hc->tab[h].used) return NULL;
    if (key_eq(&hc->tab[h].key, k)) return &hc->tab[h];
  }
}

/* memset called through a volatile pointer: a compiler may turn malloc +
 * memset into calloc, whose fresh pages are zero without being touched. */
static void *(*const volatile touch_zero)(void *, int, size_t) = memset;

/* Doubles the table, or more until it has at least min slots. Every page is
 * touched here, not one at a time by the round that first probes it (the
 * point of pflex_alloc_ctx_reserve: a page fault costs 15-25 us on the VM
 * of bench_controller --trace). */
static int hull_grow(struct hull_cache *hc, size_t min) {
  size_t ns = hc->nslots ? 2 * hc->nslots : 256;
  while (ns < min)
    ns *= 2;
  struct hull_entry *t = pflex__hugepage_malloc(ns, sizeof *t);
  if (!t) return -ENOMEM;
  touch_zero(t, 0, ns * sizeof *t);
  for (size_t h = 0; h < hc->nslots; h++)
    if (hc->tab[h].used) {
      size_t g = key_slot(&hc->tab[h].key, ns);
      while (t[g].used)
        g = (g + 1) & (ns - 1);
      t[g] = hc->tab[h];
    }
  free(hc->tab);
  hc->tab = t;
  hc->nslots = ns;
  return 0;
}

/* Stores a copy of segs[0..len) under key k (not yet in the cache): the
 * entry, or NULL when out of memory. */
static const struct hull_entry *hull_put(struct hull_cache *hc, const struct hull_key *k,
                                         const struct pflex__seg *segs, size_t len) {
  if (2 * (hc->nused + 1) > hc->nslots && hull_grow(hc, 0)) return NULL;
  if (hc->npool + len > hc->cap_pool) {
    size_t nc = hc->cap_pool ? 2 * hc->cap_pool : 4096;
    while (nc < hc->npool + len)
      nc *= 2;
    struct pflex__seg *t = pflex__hugepage_realloc(hc->pool, nc, sizeof *t);
    if (!t) return NULL;
    hc->pool = t;
    hc->cap_pool = nc;
  }
  memcpy(&hc->pool[hc->npool], segs, len * sizeof *segs);
  size_t h = key_slot(k, hc->nslots);
  while (hc->tab[h].used)
    h = (h + 1) & (hc->nslots - 1);
  hc->tab[h] =
      (struct hull_entry){.key = *k, .off = hc->npool, .len = len, .call = hc->call, .used = true};
  hc->npool += len;
  hc->nused++;
  return &hc->tab[h];
}

/* The hulls a context keeps for calls of n jobs: beyond it the cache is
 * compacted. Three calls' worth (two passes each) plus room for the shared
 * curves of a study's many small workloads. */
static size_t hull_cache_limit(size_t n) {
  return 6 * n + 4096;
}

/* The stamp at and after which at most keep entries were last used (by
 * age in calls, counted up to 1,023; older ones are the oldest bucket). */
static uint64_t hull_cache_cutoff(const struct hull_cache *hc, size_t keep) {
  enum { AGES = 1024 };
  size_t count[AGES] = {0};
  for (size_t h = 0; h < hc->nslots; h++)
    if (hc->tab[h].used) {
      uint64_t age = hc->call - hc->tab[h].call;
      count[age < AGES ? age : AGES - 1]++;
    }
  size_t sum = 0, age = 0;
  while (age < AGES && sum + count[age] <= keep)
    sum += count[age++];
  return hc->call - age + 1; /* ages 0 .. age - 1 are kept */
}

/* When the cache is full: keeps the most recently used hulls, at most half
 * the limit, moved to the spare pool (or a new one), and drops the rest.
 * A controller's next round then still finds the hulls of every curve that
 * did not change, where a clear would make it sample them all again (a
 * round as slow as the first). Out of memory: cleared instead. */
static void hull_cache_compact(struct hull_cache *hc, size_t limit) {
  uint64_t cutoff = hull_cache_cutoff(hc, limit / 2);
  size_t nkeep = 0;
  for (size_t h = 0; h < hc->nslots; h++)
    nkeep += hc->tab[h].used && hc->tab[h].call >= cutoff;
  size_t cap = hc->cap_pool ? hc->cap_pool : 1;
  struct pflex__seg *pool =
      hc->cap_spare >= cap ? hc->spare : pflex__hugepage_malloc(cap, sizeof *pool);
  struct hull_entry *kept = malloc((nkeep ? nkeep : 1) * sizeof *kept);
  if (!pool || !kept) {
    if (pool != hc->spare) free(pool);
    free(kept);
    hull_cache_clear(hc);
    return;
  }
  if (pool == hc->spare) cap = hc->cap_spare;
  size_t m = 0, np = 0;
  for (size_t h = 0; h < hc->nslots; h++) {
    struct hull_entry *e = &hc->tab[h];
    if (!e->used) continue;
    e->used = false;
    if (e->call < cutoff) continue;
    memcpy(&pool[np], &hc->pool[e->off], e->len * sizeof *pool);
    kept[m] = *e;
    kept[m].used = true;
    kept[m++].off = np;
    np += e->len;
  }
  /* Placed afresh: the dropped entries left holes in the probe runs. */
  for (size_t k = 0; k < m; k++) {
    size_t h = key_slot(&kept[k].key, hc->nslots);
    while (hc->tab[h].used)
      h = (h + 1) & (hc->nslots - 1);
    hc->tab[h] = kept[k];
  }
  if (pool != hc->spare) free(hc->spare);
  hc->spare = hc->pool, hc->cap_spare = hc->cap_pool; /* the old pool, touched already */
  hc->pool = pool, hc->cap_pool = cap;
  hc->npool = np;
  hc->nused = m;
  free(kept);
}

int pflex_alloc_ctx_new(struct pflex_alloc_ctx **ret_ctx) {
  if (!ret_ctx) return -EINVAL;
  struct pflex_alloc_ctx *c = calloc(1, sizeof *c);
  if (!c) return -ENOMEM;
  *ret_ctx = c;
  return 0;
}

/* Room for the limit and a call's two passes past it at under half load:
 * no hull_put of such calls grows the table (its doubling was a 10 ms round
 * at 1,000 jobs: bench_controller --rounds 60). */
int pflex_alloc_ctx_reserve(struct pflex_alloc_ctx *ctx, size_t n) {
  if (!ctx) return -EINVAL;
  struct hull_cache *hc = &ctx->hulls;
  size_t want = 2 * (hull_cache_limit(n) + 2 * n) + 2;
  if (hc->nslots < want && hull_grow(hc, want)) return -ENOMEM;
  /* The pool and the compaction's spare for 16 segments a hull (about
   * twice what the controller's hulls hold), touched now too. */
  size_t segs = 16 * hull_cache_limit(n);
  if (hc->cap_pool < segs) {
    struct pflex__seg *t = pflex__hugepage_realloc(hc->pool, segs, sizeof *t);
    if (!t) return -ENOMEM;
    touch_zero(t + hc->cap_pool, 0, (segs - hc->cap_pool) * sizeof *t);
    hc->pool = t, hc->cap_pool = segs;
  }
  if (hc->cap_spare < segs) {
    free(hc->spare);
    hc->cap_spare = 0;
    if (!(hc->spare = pflex__hugepage_malloc(segs, sizeof *hc->spare))) return -ENOMEM;
    touch_zero(hc->spare, 0, segs * sizeof *hc->spare);
    hc->cap_spare = segs;
  }
  return 0;
}

void pflex_alloc_ctx_free(struct pflex_alloc_ctx *ctx) {
  if (!ctx) return;
  hull_cache_release(&ctx->hulls);
  pflex__oracle_cache_free(ctx->oracle);
  free(ctx);
}

/* Job j's hull segments (alloc_internal.h). */
size_t pflex__alloc_hull_segments(const struct pflex_alloc_job *j, double lo, double hi,
                                  unsigned knots, double *xs, double *ys, struct pflex__hullpt *hp,
                                  struct pflex__seg *out) {
  size_t nk;
  if (pflex_curve_kind(j->curve) == PFLEX_CURVE_PARAMETRIC) {
    /* Knots uniform in clock: exact points of the curve, cheaply. */
    nk = knots;
    pflex_curve_sample(j->curve, lo, hi, nk, xs, ys);
    for (size_t m = 0; m < nk; m++)
      hp[m] = (struct pflex__hullpt){xs[m], j->weight * ys[m]};
    /* Rounding in the clock round trip must not unsort the knots. */
    size_t u = 0;
    for (size_t m = 0; m < nk; m++)
      if (u == 0 || hp[m].x > hp[u - 1].x) hp[u++] = hp[m];
    nk = u;
  } else {
    /* The knots are sorted: one run of evaluations (pflex_curve_eval's values). */
    nk = pflex__alloc_knots(j->curve, lo, hi, knots, xs);
    pflex_curve_eval_sorted(j->curve, xs, nk, ys);
    for (size_t m = 0; m < nk; m++)
      hp[m] = (struct pflex__hullpt){xs[m], j->weight * ys[m]};
  }
  size_t nh = pflex__alloc_upper_hull(hp, nk), ns = 0;
  for (size_t m = 0; m + 1 < nh; m++) {
    double dp = hp[m + 1].x - hp[m].x, slope = (hp[m + 1].y - hp[m].y) / dp;
    if (!(slope > 0)) break; /* flat from here: power without gain */
    out[ns++] = (struct pflex__seg){slope, dp};
  }
  return ns;
}

/* One greedy pass's hulls: job i's segments js[i][0..jn[i]), steepest first;
 * jobs with the same hull key share one (distinct hull d: its first job
 * rep[d], mult[d] jobs). Hulls sampled in this pass live in local, the
 * context's in its pool. block: one allocation holding the arrays of the
 * pass and of its scratch (pass_scratch_init). */
struct pass {
  const struct pflex__seg **js;
  size_t *jn, *nfull, *rep, *dist, nd; /* dist[i]: job i's distinct hull (where jn[i] > 0) */
  double *mult;
  struct pflex__seg *local;
  size_t nlocal, cap_local;
  void *block;
  size_t block_bytes;
};

/* The memory a pass leaves to the next pass of the same call (optimal's
 * two): its block, its local and pass_threshold's work array, whose pages
 * are in use already. At 10^6 jobs
 * they are hundreds of MB, and faulting fresh pages in again (zeroed by
 * the kernel) cost more than the second pass's sampling. */
struct pass_mem {
  void *block;
  size_t block_bytes;
  struct pflex__seg *local, *work; /* work: pass_threshold's */
  size_t cap_local, cap_work;
};

static void pass_mem_free(struct pass_mem *mem) {
  free(mem->block);
  free(mem->local);
  free(mem->work);
}

/* Frees ps's memory, or leaves it to mem (not NULL) for the next pass. */
static void pass_release(struct pass *ps, struct pass_mem *mem) {
  if (!mem) {
    free(ps->block);
    free(ps->local);
    return;
  }
  free(mem->block);
  free(mem->local);
  mem->block = ps->block, mem->block_bytes = ps->block_bytes;
  mem->local = ps->local, mem->cap_local = ps->cap_local;
}

/* The room one job's sampling needs (knots + points + 2, as pflex__alloc_hull_segments):
 * the most over the jobs in *ret_maxk; -EINVAL for a job without a curve. */
static int pass_max_knots(const struct pflex_alloc_job *jobs, size_t n, unsigned knots,
                          size_t *ret_maxk) {
  size_t maxk = 0;
  for (size_t i = 0; i < n; i++) {
    size_t np;
    if (!jobs[i].curve) return -EINVAL;
    pflex_curve_points(jobs[i].curve, &np);
    if (knots + np + 2 > maxk) maxk = knots + np + 2;
  }
  *ret_maxk = maxk;
  return 0;
}

/* pass_hulls's working memory. first[h]: the first job with a hull key (open
 * addressing), fdig[h] its digest (no pointer chase); where[i]: job i's hull,
 * in the pool (in_pool[i], from the context) or in the pass's local; xs,
 * ys, hp: room for one job's sampling (maxk). */
struct pass_scratch {
  size_t *first, *where, nslots, maxk;
  uint64_t *fdig;
  bool *in_pool;
  double *xs, *ys;
  struct pflex__hullpt *hp;
};

/* Arrays carved from one allocation: each at *at, count elements of size
 * bytes (a multiple of 8 but for the last). */
struct carve {
  void **at;
  size_t size, count;
};

static void *carve_block(const struct carve *t, size_t nt, struct pass_mem *mem,
                         size_t *ret_bytes) {
  size_t total = 0;
  for (size_t k = 0; k < nt; k++)
    total += t[k].size * t[k].count;
  total = total ? total : 1;
  unsigned char *block, *at;
  if (mem && mem->block && mem->block_bytes >= total) {
    block = mem->block, total = mem->block_bytes; /* taken from the last pass */
    mem->block = NULL;
  } else {
    block = pflex__hugepage_malloc(total, 1);
  }
  at = block;
  *ret_bytes = total;
  for (size_t k = 0; block && k < nt; k++) {
    *t[k].at = at;
    at += t[k].size * t[k].count;
  }
  return block;
}

/* Allocates the scratch for n jobs and ps's arrays, in one block that ps
 * releases. */
static int pass_scratch_init(struct pass_scratch *sc, struct pass *ps, size_t n, size_t maxk,
                             struct pass_mem *mem) {
  size_t nslots = 16, m = n ? n : 1;
  while (nslots < 2 * n)
    nslots *= 2;
  *sc = (struct pass_scratch){.nslots = nslots, .maxk = maxk};
  const struct carve t[] = {
      {(void **)&sc->first, sizeof *sc->first, nslots},
      {(void **)&sc->fdig, sizeof *sc->fdig, nslots},
      {(void **)&sc->where, sizeof *sc->where, m},
      {(void **)&sc->xs, sizeof *sc->xs, maxk},
      {(void **)&sc->ys, sizeof *sc->ys, maxk},
      {(void **)&sc->hp, sizeof *sc->hp, maxk},
      {(void **)&ps->js, sizeof *ps->js, m},
      {(void **)&ps->jn, sizeof *ps->jn, m},
      {(void **)&ps->nfull, sizeof *ps->nfull, m},
      {(void **)&ps->rep, sizeof *ps->rep, m},
      {(void **)&ps->dist, sizeof *ps->dist, m},
      {(void **)&ps->mult, sizeof *ps->mult, m},
      {(void **)&sc->in_pool, sizeof *sc->in_pool, m}, /* bool: last */
  };
  if (!(ps->block = carve_block(t, sizeof t / sizeof *t, mem, &ps->block_bytes))) return -ENOMEM;
  if (mem && mem->local) { /* the last pass's, empty again */
    ps->local = mem->local, ps->cap_local = mem->cap_local;
    mem->local = NULL;
  }
  memset(ps->jn, 0, m * sizeof *ps->jn);
  memset(ps->nfull, 0, m * sizeof *ps->nfull);
  for (size_t h = 0; h < nslots; h++)
    sc->first[h] = SIZE_MAX;
  return 0;
}

/* The slot of job i's key: the one of the earlier job of this pass with the
 * same hull, or the empty one where it goes. */
static size_t pass_slot(const struct pass_scratch *sc, const struct pflex_alloc_job *jobs,
                        const double *wlo, const double *whi, const struct hull_key *key,
                        size_t i) {
  size_t h = key_slot(key, sc->nslots);
  for (; sc->first[h] != SIZE_MAX; h = (h + 1) & (sc->nslots - 1)) {
    size_t j = sc->first[h];
    if (sc->fdig[h] == key->digest && wlo[j] == wlo[i] && whi[j] == whi[i] &&
        jobs[j].weight == jobs[i].weight)
      break;
  }
  return h;
}

/* The most hull segments pass_hulls reserves room for before sampling (1 GiB
 * of address space); past them, local grows as it fills. */
#define PASS_LOCAL_RESERVE ((size_t)1 << 26)

/* Room for one more job's segments (maxk) at the end of ps's local. */
static int pass_reserve_local(struct pass *ps, size_t maxk) {
  if (ps->nlocal + maxk <= ps->cap_local) return 0;
  size_t nc = ps->cap_local ? 2 * ps->cap_local : 1024;
  while (nc < ps->nlocal + maxk)
    nc *= 2;
  struct pflex__seg *t = pflex__hugepage_realloc(ps->local, nc, sizeof *t);
  if (!t) return -ENOMEM;
  ps->local = t;
  ps->cap_local = nc;
  return 0;
}

/* Job i's hull, the first of its key in this pass: from the context when it
 * holds it, else sampled into local (and kept in the context). */
static int pass_find_or_sample(const struct pflex_alloc_job *jobs, const double *wlo,
                               const double *whi, const struct hull_key *key, size_t i,
                               struct hull_cache *hc, struct pass_scratch *sc, struct pass *ps) {
  /* A callback curve's digest names its function, not what it computes
   * now: without a content digest it is shared within this pass only, never
   * kept in the context (pflex__alloc_curve_key). */
  bool keep = hc && key->keep;
  struct hull_entry *e = keep ? hull_find(hc, key) : NULL;
  if (e) {
    e->call = hc->call;
    sc->where[i] = e->off, sc->in_pool[i] = true, ps->jn[i] = e->len;
    return 0;
  }
  if (pass_reserve_local(ps, sc->maxk) < 0) return -ENOMEM;
  struct pflex__seg *out = &ps->local[ps->nlocal];
  size_t len =
      pflex__alloc_hull_segments(&jobs[i], wlo[i], whi[i], key->knots, sc->xs, sc->ys, sc->hp, out);
  if (keep && !hull_put(hc, key, out, len)) return -ENOMEM;
  sc->where[i] = ps->nlocal, sc->in_pool[i] = false, ps->jn[i] = len;
  ps->nlocal += len;
  return 0;
}

/* Finds or samples every job's hull on its window (see struct pass): each
 * job with room and weight either shares the hull of an earlier job of the
 * pass with the same key or starts a distinct hull of its own. */
static int pass_hulls(const struct pflex_alloc_job *jobs, size_t n, const double *wlo,
                      const double *whi, unsigned knots, size_t maxk, struct hull_cache *hc,
                      struct pass_mem *mem, struct pass *ps) {
  if (hc && hc->nused > hull_cache_limit(n)) hull_cache_compact(hc, hull_cache_limit(n));
  struct pass_scratch sc;
  int err = pass_scratch_init(&sc, ps, n, maxk, mem);
  /* Room for every job's own hull at once, up to PASS_LOCAL_RESERVE
   * segments: grown by doubling, local was copied about 20 times at 10^6
   * jobs and its moved pages faulted in again. Pages of it that no hull
   * reaches are never touched, so never backed by memory. Where the system
   * refuses that much address space (strict overcommit), local grows as it
   * fills, as before. */
  if (!err && n)
    (void)pass_reserve_local(ps, n <= PASS_LOCAL_RESERVE / maxk ? n * maxk : PASS_LOCAL_RESERVE);
  for (size_t i = 0; !err && i < n; i++) {
    if (!(whi[i] > wlo[i]) || !(jobs[i].weight > 0)) continue;
    bool keep;
    uint64_t digest = pflex__alloc_curve_key(&jobs[i], &keep);
    struct hull_key key = key_of(digest, wlo[i], whi[i], jobs[i].weight, knots);
    key.keep = keep;
    size_t h = pass_slot(&sc, jobs, wlo, whi, &key, i);
    if (sc.first[h] != SIZE_MAX) { /* as an earlier job of this pass */
      size_t j = sc.first[h];
      sc.where[i] = sc.where[j], sc.in_pool[i] = sc.in_pool[j], ps->jn[i] = ps->jn[j];
      ps->mult[ps->dist[i] = ps->dist[j]]++;
      continue;
    }
    sc.first[h] = i;
    sc.fdig[h] = key.digest;
    if ((err = pass_find_or_sample(jobs, wlo, whi, &key, i, hc, &sc, ps)) < 0) break;
    ps->dist[i] = ps->nd;
    ps->rep[ps->nd] = i;
    ps->mult[ps->nd++] = 1;
  }
  /* Pointers only now: the pool and local may have moved while growing. */
  for (size_t i = 0; !err && i < n; i++)
    ps->js[i] = ps->jn[i] ? (sc.in_pool[i] ? hc->pool : ps->local) + sc.where[i] : NULL;
  return err;
}

/* The threshold slope of the pass: it depends on each slope's total length
 * only, so a hull shared by m jobs enters once, its lengths times m. */
static int pass_threshold(const struct pass *ps, struct pass_mem *mem, double budget,
                          double *ret_lambda) {
  size_t nw = 0;
  for (size_t d = 0; d < ps->nd; d++)
    nw += ps->jn[ps->rep[d]];
  nw = nw ? nw : 1;
  struct pflex__seg *work;
  if (mem && mem->work && mem->cap_work >= nw) { /* the last pass's */
    work = mem->work;
  } else {
    /* For the next pass, room for as many segments as local has (its pages
     * are touched only as far as they are used), or just these. */
    size_t cap = mem && ps->cap_local > nw ? ps->cap_local : nw;
    work = pflex__hugepage_malloc(cap, sizeof *work);
    if (!work && cap > nw) work = pflex__hugepage_malloc(cap = nw, sizeof *work);
    if (!work) return -ENOMEM;
    if (mem) free(mem->work), mem->work = work, mem->cap_work = cap;
  }
  nw = 0;
  for (size_t d = 0; d < ps->nd; d++) {
    size_t i = ps->rep[d];
    for (size_t m = 0; m < ps->jn[i]; m++)
      work[nw++] = (struct pflex__seg){ps->js[i][m].slope, ps->js[i][m].dp * ps->mult[d]};
  }
  *ret_lambda = pflex__alloc_threshold(work, nw, budget);
  if (!mem) free(work);
  return 0;
}

/* Job i takes every segment of its hull steeper than lambda, from wlo[i]:
 * its power p[i] and nfull[i]; the budget left after it. A job that shares
 * the hull (and so the window) of an earlier one ends where that one did,
 * and only the budget is reduced by each segment, in the same order. */
static double take_steeper(struct pass *ps, size_t i, const double *wlo, double lambda, double *p,
                           double left) {
  const struct pflex__seg *js = ps->js[i];
  size_t r = ps->jn[i] ? ps->rep[ps->dist[i]] : i, m = 0;
  if (r != i) {
    p[i] = p[r];
    ps->nfull[i] = ps->nfull[r];
    for (; m < ps->nfull[r]; m++)
      left -= js[m].dp;
    return left;
  }
  p[i] = wlo[i];
  for (; m < ps->jn[i] && js[m].slope > lambda; m++) {
    p[i] += js[m].dp;
    left -= js[m].dp;
  }
  ps->nfull[i] = m;
  return left;
}

/* Whether kept pass k serves jobs with these weights and knots. */
static bool kept_fits(const struct pflex__pass1 *k, const struct pflex_alloc_job *jobs, size_t n,
                      unsigned knots) {
  if (k->state != 1 || k->knots != knots) return false;
  for (size_t i = 0; i < n; i++)
    if (!(jobs[i].weight == k->weight[i])) return false;
  return true;
}

/* Keeps pass ps (on the jobs' own bounds) in k, copying its hulls: never
 * where a job has a callback curve; not where memory runs out (a cache). */
static void pass_keep(struct pflex__pass1 *k, const struct pflex_alloc_job *jobs, size_t n,
                      const double *wlo, const double *whi, unsigned knots, const struct pass *ps) {
  size_t nd = ps->nd, m = n ? n : 1, md = nd ? nd : 1, nseg = 0;
  for (size_t i = 0; i < n; i++)
    if (pflex_curve_kind(jobs[i].curve) == PFLEX_CURVE_CALLBACK) {
      pflex__pass1_reset(k, -1);
      return;
    }
  for (size_t d = 0; d < nd; d++)
    nseg += ps->jn[ps->rep[d]];
  *k = (struct pflex__pass1){.state = 1, .knots = knots, .nd = nd};
  k->weight = malloc(m * sizeof *k->weight), k->jn = malloc(m * sizeof *k->jn);
  k->dist = malloc(m * sizeof *k->dist), k->rep = malloc(md * sizeof *k->rep);
  k->off = malloc(md * sizeof *k->off), k->mult = malloc(md * sizeof *k->mult);
  k->segs = malloc((nseg ? nseg : 1) * sizeof *k->segs);
  if (!k->weight || !k->jn || !k->dist || !k->rep || !k->off || !k->mult || !k->segs) {
    pflex__pass1_reset(k, -1);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    k->weight[i] = jobs[i].weight, k->jn[i] = ps->jn[i];
    k->dist[i] = whi[i] > wlo[i] && jobs[i].weight > 0 ? ps->dist[i] : SIZE_MAX; /* as pass_hulls */
  }
  nseg = 0;
  for (size_t d = 0; d < nd; d++) {
    size_t r = ps->rep[d];
    k->rep[d] = r, k->mult[d] = ps->mult[d], k->off[d] = nseg;
    if (ps->jn[r]) memcpy(&k->segs[nseg], ps->js[r], ps->jn[r] * sizeof *k->segs);
    nseg += ps->jn[r];
  }
}

/* Pass ps from kept k: the same hulls (copies), jobs and counts as
 * pass_hulls gave when k was kept. */
static int pass_from_kept(const struct pflex__pass1 *k, size_t n, struct pass *ps) {
  size_t m = n ? n : 1, md = k->nd ? k->nd : 1;
  const struct carve t[] = {
      {(void **)&ps->js, sizeof *ps->js, m},       {(void **)&ps->jn, sizeof *ps->jn, m},
      {(void **)&ps->nfull, sizeof *ps->nfull, m}, {(void **)&ps->rep, sizeof *ps->rep, md},
      {(void **)&ps->dist, sizeof *ps->dist, m},   {(void **)&ps->mult, sizeof *ps->mult, md},
  };
  if (!(ps->block = carve_block(t, sizeof t / sizeof *t, NULL, &ps->block_bytes))) return -ENOMEM;
  ps->nd = k->nd;
  memcpy(ps->rep, k->rep, k->nd * sizeof *ps->rep);
  memcpy(ps->mult, k->mult, k->nd * sizeof *ps->mult);
  for (size_t i = 0; i < n; i++) {
    ps->jn[i] = k->jn[i], ps->dist[i] = k->dist[i], ps->nfull[i] = 0;
    ps->js[i] = k->jn[i] ? k->segs + k->off[k->dist[i]] : NULL;
  }
  return 0;
}

/* One greedy pass with job i confined to the window [wlo[i], whi[i]] inside
 * its bounds; budget is the power above the sum of wlo. hc (may be NULL)
 * caches hulls across calls. maxk: pass_max_knots's room. p1 (may be
 * NULL): where the first pass on prepared jobs is kept, the windows being
 * their bounds. */
static int greedy(const struct pflex_alloc_job *jobs, size_t n, const struct pflex__prep *pr,
                  const double *wlo, const double *whi, double budget, unsigned knots, size_t maxk,
                  struct hull_cache *hc, struct pflex__pass1 *p1, struct pass_mem *mem, double *p,
                  double *ret_gap) {
  struct pass ps = {0};
  double lambda;
  int err;
  if (p1 && kept_fits(p1, jobs, n, knots)) {
    err = pass_from_kept(p1, n, &ps);
  } else {
    err = pass_hulls(jobs, n, wlo, whi, knots, maxk, hc, mem, &ps);
    if (!err && p1 && p1->state == 0) pass_keep(p1, jobs, n, wlo, whi, knots, &ps);
  }
  if (!err) err = pass_threshold(&ps, mem, budget, &lambda);
  if (err) goto out;
  const struct pflex__seg *const *js = ps.js;
  const size_t *jn = ps.jn;
  size_t *nfull = ps.nfull;
  /* Take every segment steeper than lambda; segments at exactly lambda share
   * what is left in job order, so at most one job ends inside a segment. */
  double left = budget;
  for (size_t i = 0; i < n; i++)
    left = take_steeper(&ps, i, wlo, lambda, p, left);
  double gap = 0;
  for (size_t i = 0; i < n && left > 0; i++)
    for (size_t m = nfull[i]; m < jn[i] && left > 0; m++) {
      if (js[i][m].slope < lambda) break;
      double take = pflex__fmin(js[i][m].dp, left);
      p[i] += take;
      left -= take;
      if (take < js[i][m].dp) {
        /* Inside a hull segment: the hull may lie above the curve there. */
        double start = p[i] - take;
        double w = jobs[i].weight;
        double hull = w * pflex_curve_eval(jobs[i].curve, start) + js[i][m].slope * take;
        double got = w * pflex_curve_eval(jobs[i].curve, p[i]);
        if (hull - got > gap) {
          gap = hull - got;
          double better;
          if ((err = repair(jobs, n, js, jn, nfull, p, i, m, take, &better))) goto out;
          gap = pflex__fmax(0.0, gap - better);
        }
      } else {
        nfull[i]++;
      }
    }
  /* Power no curve turns into throughput still may be used: give it out up to
   * P_max in job order rather than cut jobs for nothing. */
  for (size_t i = 0; i < n && left > 0; i++) {
    double take = pflex__fmin(pr[i].hi - p[i], left);
    if (take > 0) {
      p[i] += take;
      left -= take;
    }
  }
  for (size_t i = 0; i < n; i++)
    p[i] = pflex__fmin(pflex__fmax(p[i], wlo[i]), pr[i].hi);
  *ret_gap = gap;
out:
  pass_release(&ps, mem);
  return err;
}

/* Curve values at the jobs' powers within one call: jobs of a workload often
 * share a curve and a power (equal jobs sit on equal knots), and such a job
 * reads the value of the last one seen (direct-mapped on curve and power)
 * instead of evaluating the curve again: the same value, bit for bit. */
#define EVAL_MEMO 128
struct eval_memo {
  const struct pflex_curve *c[EVAL_MEMO];
  double p[EVAL_MEMO], t[EVAL_MEMO];
};

static double memo_eval(struct eval_memo *m, const struct pflex_curve *c, double p) {
  uint64_t h = mix((uint64_t)(uintptr_t)c, dbits(p));
  size_t k = (size_t)(h >> 57) & (EVAL_MEMO - 1);
  if (m->c[k] != c || dbits(m->p[k]) != dbits(p)) {
    m->c[k] = c;
    m->p[k] = p;
    m->t[k] = pflex_curve_eval(c, p);
  }
  return m->t[k];
}

/* The weighted total at powers p, summed in job order; each job's term into
 * f[i] unless f is NULL. */
static double objective_into(const struct pflex_alloc_job *jobs, size_t n, const double *p,
                             double *f) {
  struct eval_memo m;
  memset(m.c, 0, sizeof m.c);
  double s = 0;
  for (size_t i = 0; i < n; i++) {
    double v = jobs[i].weight * memo_eval(&m, jobs[i].curve, p[i]);
    if (f) f[i] = v;
    s += v;
  }
  return s;
}

static double objective(const struct pflex_alloc_job *jobs, size_t n, const double *p) {
  return objective_into(jobs, n, p, NULL);
}

/* ---- local search on the curves themselves ---------------------------------- */

/* Transfer amounts (W): a geometric ladder, ratio 2, from the widest job
 * range down by a factor 2^(LS_STEPS - 1) (about 1/2000). */
#define LS_STEPS 12
/* At most this many improving transfers per call. */
#define LS_ROUNDS 64
/* A transfer must gain more than this share of the objective. */
#define LS_TOL 1e-7
/* Per amount, the receivers and donors kept as candidates (see local_search). */
#define LS_KEEP (3 * LS_ROUNDS + 3)

/* Known concave: a parametric curve (concave by construction) or a piecewise
 * linear measured curve whose secant slopes do not increase. For those the
 * hull greedy (with its refinement) is the method; the local search is for
 * the others (Steffen, callbacks, non-concave points). */
static bool known_concave(const struct pflex_curve *c) {
  if (pflex_curve_kind(c) == PFLEX_CURVE_PARAMETRIC) return true;
  if (!pflex_curve_piecewise_linear(c)) return false;
  size_t np;
  const struct pflex_curve_point *pt = pflex_curve_points(c, &np);
  for (size_t m = 2; m < np; m++) {
    double s0 = (pt[m - 1].tput - pt[m - 2].tput) / (pt[m - 1].power_w - pt[m - 2].power_w);
    double s1 = (pt[m].tput - pt[m - 1].tput) / (pt[m].power_w - pt[m - 1].power_w);
    if (s1 > s0) return false;
  }
  return true;
}

/* Change of job i's weighted throughput when its power moves by d (W); -INF
 * when that leaves its bounds. */
static double delta_of(const struct pflex_alloc_job *jobs, const struct pflex__prep *pr,
                       const double *p, const double *f, size_t i, double d) {
  double x = p[i] + d;
  if (!(x <= pr[i].hi) || !(x >= pr[i].lo)) return -INFINITY;
  return val(&jobs[i], x) - f[i];
}

/* A kept candidate: value and job. Heap order: the worst on top, worst =
 * lower value, or equal value and higher job index. */
struct keep {
  double v;
  size_t i;
};

static bool worse(struct keep a, struct keep b) {
  return a.v < b.v || (a.v == b.v && a.i > b.i);
}

static void keep_push(struct keep *h, size_t n, struct keep x) {
  size_t m = n;
  while (m > 0 && worse(x, h[(m - 1) / 2])) {
    h[m] = h[(m - 1) / 2];
    m = (m - 1) / 2;
  }
  h[m] = x;
}

/* Replaces the top of a full heap of n by x and sifts it down. */
static void keep_replace(struct keep *h, size_t n, struct keep x) {
  size_t m = 0;
  for (;;) {
    size_t c = 2 * m + 1;
    if (c >= n) break;
    if (c + 1 < n && worse(h[c + 1], h[c])) c++;
    if (!worse(h[c], x)) break;
    h[m] = h[c];
    m = c;
  }
  h[m] = x;
}

#define NONE SIZE_MAX

/* The best rows of a column, in the order (value descending, row ascending):
 * a true top-n (every other row comes after all of them), n <= LS_TOPK. The
 * search needs the top three; keeping a few more spares most rescans when a
 * leader's value falls. */
#define LS_TOPK 5
struct topk {
  size_t r[LS_TOPK];
  int n;
};

static bool before(const double *col, size_t a, size_t b) {
  return col[a] > col[b] || (col[a] == col[b] && a < b);
}

/* Inserts row x (not in t) where it belongs if it comes before the last kept
 * row, or if t is known to hold every row so far (complete, while scanning);
 * past LS_TOPK the last drops out. Otherwise x stays out: its place among the
 * rows not kept is unknown. */
static void topk_offer(const double *col, struct topk *t, size_t x, bool complete) {
  if (!(t->n > 0 && before(col, x, t->r[t->n - 1])) && !(complete && t->n < LS_TOPK)) return;
  int at = t->n;
  while (at > 0 && before(col, x, t->r[at - 1]))
    at--;
  int end = t->n < LS_TOPK ? t->n : LS_TOPK - 1;
  for (int m = end; m > at; m--)
    t->r[m] = t->r[m - 1];
  t->r[at] = x;
  if (t->n < LS_TOPK) t->n++;
}

/* A complete scan, as topk_offer(col, t, s, true) for s = 0..ns-1 would
 * build it; with the kept values in locals (no reloads through t). Rows
 * come in order, so a row goes before a kept one only by a greater value:
 * a tie with the last stays out. */
static void topk_scan(const double *col, size_t ns, struct topk *t) {
  double v[LS_TOPK];
  size_t r[LS_TOPK];
  int n = 0;
  size_t s = 0;
  for (; s < ns; s++) {
    if (n == LS_TOPK) {
      /* Full: most rows fail the test against the last kept value alone. */
      double last = v[LS_TOPK - 1];
      while (s < ns && !(col[s] > last))
        s++;
      if (s == ns) break;
    }
    double x = col[s];
    int at = n < LS_TOPK ? n : LS_TOPK - 1;
    for (; at > 0 && x > v[at - 1]; at--) {
      v[at] = v[at - 1];
      r[at] = r[at - 1];
    }
    v[at] = x;
    r[at] = s;
    if (n < LS_TOPK) n++;
  }
  t->n = n;
  memcpy(t->r, r, (size_t)n * sizeof *r);
}

static void topk_remove(struct topk *t, size_t x) {
  for (int m = 0; m < t->n; m++)
    if (t->r[m] == x) {
      for (int k = m + 1; k < t->n; k++)
        t->r[k - 1] = t->r[k];
      t->n--;
      return;
    }
}

#define NONE SIZE_MAX

/* The three best rows (NONE where fewer). */
static void top3_of(const struct topk *t, size_t *top) {
  for (int m = 0; m < 3; m++)
    top[m] = m < t->n ? t->r[m] : NONE;
}

/* The local search's state: the amounts ds (halving from the widest range),
 * the candidate jobs set[0..ns), their gains tab[(2k) ns + s] for +ds[k] and
 * tab[(2k+1) ns + s] for -ds[k], and per column c the best rows (receivers
 * for even c, donors for odd c), top[c][0..2] the three best (NONE when
 * ns < 3), kept up to date as rows change. */
struct ls {
  const struct pflex_alloc_job *jobs;
  const struct pflex__prep *pr;
  double *p, *f, obj;
  double ds[LS_STEPS];
  size_t *set, ns;
  double *tab;
  struct topk best_rows[2 * LS_STEPS];
  size_t top[2 * LS_STEPS][3];
  /* The amounts in increasing order, -ds[0] .. -ds[LS_STEPS - 1], then
   * ds[LS_STEPS - 1] .. ds[0], and the column of each. */
  double amt[2 * LS_STEPS];
  int col[2 * LS_STEPS];
};

/* Row r of the table: set[r]'s gains for every amount, both ways, as
 * delta_of gives them. The powers p + amt[c] rise with c, and those in
 * bounds are evaluated in one run. */
static void fill_row(const struct ls *s, size_t r) {
  size_t i = s->set[r], ns = s->ns, m = 0;
  const struct pflex__prep *b = &s->pr[i];
  double xs[2 * LS_STEPS], ts[2 * LS_STEPS];
  int col[2 * LS_STEPS];
  for (int c = 0; c < 2 * LS_STEPS; c++) {
    double x = s->p[i] + s->amt[c];
    if (!(x <= b->hi) || !(x >= b->lo)) {
      s->tab[s->col[c] * ns + r] = -INFINITY;
      continue;
    }
    xs[m] = x;
    col[m++] = s->col[c];
  }
  pflex_curve_eval_sorted(s->jobs[i].curve, xs, m, ts);
  for (size_t q = 0; q < m; q++)
    s->tab[col[q] * ns + r] = s->jobs[i].weight * ts[q] - s->f[i];
}

/* A move: rows row[0..n) each moved by the amount of column col[m]. */
struct ls_move {
  double gain;
  size_t row[3];
  int col[3], n;
};

/* Job i's gain for column c (+ds[c/2] for even c, -ds[c/2] for odd). */
static double cand_gain(const struct ls *s, size_t i, int c) {
  return delta_of(s->jobs, s->pr, s->p, s->f, i, c % 2 ? -s->ds[c / 2] : s->ds[c / 2]);
}

/* Marks in in[] the candidates: per amount and direction the LS_KEEP best
 * jobs of one scan (every job when n <= LS_KEEP); their number. */
static int ls_candidates(const struct ls *s, size_t n, bool *in, size_t *ret_ns) {
  if (n <= LS_KEEP) {
    for (size_t i = 0; i < n; i++)
      in[i] = true;
    *ret_ns = n;
    return 0;
  }
  /* One pass; per column a heap of its LS_KEEP best so far, worst on top.
   * Jobs come in index order, so a tie with the worst kept stays out. */
  size_t hn[2 * LS_STEPS] = {0}, ns = 0;
  struct keep *heap = malloc(2 * LS_STEPS * LS_KEEP * sizeof *heap);
  if (!heap) return -ENOMEM;
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < 2 * LS_STEPS; c++) {
      double x = cand_gain(s, i, c);
      struct keep *h = &heap[c * LS_KEEP];
      if (hn[c] < LS_KEEP)
        keep_push(h, hn[c]++, (struct keep){x, i});
      else if (x > h[0].v)
        keep_replace(h, LS_KEEP, (struct keep){x, i});
    }
  for (int c = 0; c < 2 * LS_STEPS; c++)
    for (size_t m = 0; m < hn[c]; m++) {
      size_t i = heap[c * LS_KEEP + m].i;
      if (!in[i]) {
        in[i] = true;
        ns++;
      }
    }
  free(heap);
  *ret_ns = ns;
  return 0;
}

/* Fills every row of the table. Jobs of a workload often share a curve and
 * sit at the same point of it (the greedy puts equal jobs on equal knots):
 * such a job copies the row of the first one seen with the same curve,
 * power, bounds and weight (a hash table on them) instead of evaluating the
 * curve again; same values, bit for bit. */
static int ls_fill_table(struct ls *s) {
  const struct pflex_alloc_job *jobs = s->jobs;
  const struct pflex__prep *pr = s->pr;
  const double *p = s->p;
  size_t ns = s->ns, nhash = 16;
  while (nhash < 2 * ns)
    nhash *= 2;
  size_t *hash = malloc(nhash * sizeof *hash);
  if (!hash) return -ENOMEM;
  for (size_t h = 0; h < nhash; h++)
    hash[h] = NONE;
  for (size_t r = 0; r < ns; r++) {
    size_t i = s->set[r];
    const struct pflex_alloc_job *js = &jobs[i];
    uint64_t key = mix(mix(mix((uint64_t)(uintptr_t)js->curve, dbits(p[i])), dbits(pr[i].lo)),
                       dbits(pr[i].hi));
    size_t h = (size_t)(key ^ (key >> 29)) & (nhash - 1);
    for (; hash[h] != NONE; h = (h + 1) & (nhash - 1)) {
      size_t o = s->set[hash[h]];
      if (jobs[o].curve == js->curve && p[o] == p[i] && pr[o].lo == pr[i].lo &&
          pr[o].hi == pr[i].hi && jobs[o].weight == js->weight)
        break;
    }
    if (hash[h] != NONE) {
      for (int c = 0; c < 2 * LS_STEPS; c++)
        s->tab[c * ns + r] = s->tab[c * ns + hash[h]];
      continue;
    }
    hash[h] = r;
    fill_row(s, r);
  }
  free(hash);
  return 0;
}

/* Up to this many jobs, every job's row of gains is filled once (in one
 * sorted run of curve evaluations each) and every job is a candidate
 * (ls_table); past it the candidates are chosen first, each gain evaluated
 * on its own, and only their rows are filled. */
#define LS_FULL_MAX 65536

/* Every job's row of gains: s's set all the jobs and its table theirs. */
static int ls_full_table(struct ls *s, size_t n) {
  s->ns = n;
  s->set = pflex__hugepage_malloc(n, sizeof *s->set);
  s->tab = pflex__hugepage_malloc(n * 2 * LS_STEPS, sizeof *s->tab);
  if (!s->set || !s->tab) return -ENOMEM;
  for (size_t i = 0; i < n; i++)
    s->set[i] = i;
  return ls_fill_table(s);
}

/* The candidate set (in[], ls_candidates) and its table of gains. Up to
 * LS_FULL_MAX jobs every job is a candidate: its row is filled anyway, and
 * the search reads only each column's best rows, so the moves are those of
 * the restricted set (which holds every column's LS_KEEP best, in the same
 * job order for ties), without choosing it (a heap per column: a tenth of
 * a controller's round at 1,000 jobs). */
static int ls_table(struct ls *s, size_t n, bool *in) {
  if (n > LS_KEEP && n <= LS_FULL_MAX) return ls_full_table(s, n);
  int err = ls_candidates(s, n, in, &s->ns);
  if (!err) {
    s->set = malloc(s->ns * sizeof *s->set);
    s->tab = malloc(s->ns * 2 * LS_STEPS * sizeof *s->tab);
    err = s->set && s->tab ? 0 : -ENOMEM;
  }
  size_t ns = 0;
  for (size_t i = 0; !err && i < n; i++)
    if (in[i]) s->set[ns++] = i;
  return err ? err : ls_fill_table(s);
}

/* The best pair move into *mv: one receiver and one donor of ds[k]. */
static void ls_best_pair(const struct ls *s, struct ls_move *mv) {
  size_t ns = s->ns;
  for (int k = 0; k < LS_STEPS; k++) {
    const size_t *tu = s->top[2 * k], *td = s->top[2 * k + 1];
    const double *u = &s->tab[(2 * k) * ns], *d = &s->tab[(2 * k + 1) * ns];
    /* No pair of this amount beats the best two values' sum (rounding is
     * monotone): skip it when that does not beat the move so far. */
    if (tu[0] == NONE || td[0] == NONE || !(u[tu[0]] + d[td[0]] > mv->gain)) continue;
    for (int x = 0; x < 3; x++)
      for (int y = 0; y < 3; y++) {
        if (tu[x] == NONE || td[y] == NONE || tu[x] == td[y]) continue;
        double g = u[tu[x]] + d[td[y]];
        if (g > mv->gain) *mv = (struct ls_move){g, {tu[x], td[y]}, {2 * k, 2 * k + 1}, 2};
      }
  }
}

/* A better three-job move into *mv, if there is one: one receiver of ds[k]
 * and two donors of ds[k + 1] = ds[k] / 2 each, or one donor and two
 * receivers. */
static void ls_best_triple(const struct ls *s, struct ls_move *mv) {
  size_t ns = s->ns;
  for (int k = 0; k + 1 < LS_STEPS; k++) {
    for (int side = 0; side < 2; side++) {
      /* side 0: receiver of ds[k], donors of ds[k+1]; side 1: the reverse. */
      int c1 = 2 * k + side, c2 = 2 * (k + 1) + 1 - side;
      const size_t *t1 = s->top[c1], *t2 = s->top[c2];
      const double *v1 = &s->tab[c1 * ns], *v2 = &s->tab[c2 * ns];
      /* As in ls_best_pair: the best values' sum bounds every triple here. */
      if (t1[0] == NONE || t2[1] == NONE || !(v1[t1[0]] + v2[t2[0]] + v2[t2[1]] > mv->gain))
        continue;
      for (int x = 0; x < 3; x++)
        for (int y = 0; y < 3; y++)
          for (int z = y + 1; z < 3; z++) {
            size_t a = t1[x], b = t2[y], c = t2[z];
            if (a == NONE || b == NONE || c == NONE || a == b || a == c) continue;
            double g = v1[a] + v2[b] + v2[c];
            if (g > mv->gain) *mv = (struct ls_move){g, {a, b, c}, {c1, c2, c2}, 3};
          }
    }
  }
}

/* The best move of a round (n == 0: none gains). Only the top three of each
 * column can be part of it. Three-job moves only when no pair move is worth
 * taking: they are rarer and cost more to look for. */
static struct ls_move ls_best_move(const struct ls *s) {
  struct ls_move mv = {.gain = 0, .n = 0};
  ls_best_pair(s, &mv);
  if (!(mv.gain > LS_TOL * fabs(s->obj))) ls_best_triple(s, &mv);
  return mv;
}

/* Carries out the move: powers, values, the objective, the moved rows and
 * the best rows of every column. Its rise of the objective. */
static double ls_apply(struct ls *s, const struct ls_move *mv) {
  double g = 0;
  for (int m = 0; m < mv->n; m++) {
    size_t i = s->set[mv->row[m]];
    s->p[i] += mv->col[m] % 2 ? -s->ds[mv->col[m] / 2] : s->ds[mv->col[m] / 2];
    double fi = val(&s->jobs[i], s->p[i]);
    g += fi - s->f[i];
    s->f[i] = fi;
  }
  s->obj += g;
  size_t ns = s->ns;
  for (int m = 0; m < mv->n; m++)
    fill_row(s, mv->row[m]);
  for (int c = 0; c < 2 * LS_STEPS; c++) {
    struct topk *t = &s->best_rows[c];
    for (int m = 0; m < mv->n; m++)
      topk_remove(t, mv->row[m]);
    for (int m = 0; m < mv->n; m++)
      topk_offer(&s->tab[c * ns], t, mv->row[m], false);
    if ((size_t)t->n < (ns < 3 ? ns : 3)) topk_scan(&s->tab[c * ns], ns, t); /* too few known */
    top3_of(t, s->top[c]);
  }
  return g;
}

/* After the hull greedy, moves power between jobs on the curves themselves
 * while the weighted total rises. Each round takes the best move of these
 * kinds, exactly over all jobs and amounts of the ladder: one receiver of
 * +ds[k] and one donor of -ds[k] (distinct); if no such pair gains more than
 * LS_TOL of the total, one receiver of +ds[k] and two donors of -ds[k + 1]
 * (= ds[k] / 2 each), or one donor and two receivers (a job crossing the
 * convex part of its curve may need power from two others). It stops when no
 * move gains more than LS_TOL of the total, or after LS_ROUNDS rounds.
 * Cost: one scan of 2 * LS_STEPS curve evaluations per job; then rounds over
 * a candidate set: for each amount and direction the LS_KEEP best jobs of
 * the scan. A move changes at most three jobs, so after r rounds at least
 * LS_KEEP - 3r of each list are unchanged and still beat every job outside
 * it: with LS_KEEP = 3 LS_ROUNDS + 3 the restricted search is the exact one.
 * Power sums change only by rounding (the caller enforces the target); each
 * job stays in its bounds. *ret_gain is the rise of the objective. The search in parts:
 * ls_candidates picks the set, ls_fill_table its gains, ls_best_move the move of a round, ls_apply
 * carries it out. f: room for the jobs' weighted throughputs at p, which
 * are there already with their sum *known (else NULL). */
static int local_search(const struct pflex_alloc_job *jobs, size_t n, const struct pflex__prep *pr,
                        double *p, double *f, const double *known, double *ret_gain) {
  *ret_gain = 0;
  if (n < 2) return 0;
  double dmax = 0;
  for (size_t i = 0; i < n; i++)
    dmax = pflex__fmax(dmax, pr[i].hi - pr[i].lo);
  if (!(dmax > 0)) return 0;
  struct ls s = {.jobs = jobs, .pr = pr, .p = p, .obj = 0};
  for (int k = 0; k < LS_STEPS; k++) {
    s.ds[k] = dmax * ldexp(1.0, -k);
    s.amt[k] = -s.ds[k], s.col[k] = 2 * k + 1;
    s.amt[2 * LS_STEPS - 1 - k] = s.ds[k], s.col[2 * LS_STEPS - 1 - k] = 2 * k;
  }
  s.f = f;
  bool *in = calloc(n, sizeof *in);
  int err = -ENOMEM;
  if (!in) goto out;
  s.obj = known ? *known : objective_into(jobs, n, p, s.f);
  if ((err = ls_table(&s, n, in)) < 0) goto out;
  for (int c = 0; c < 2 * LS_STEPS; c++) {
    topk_scan(&s.tab[c * s.ns], s.ns, &s.best_rows[c]);
    top3_of(&s.best_rows[c], s.top[c]);
  }
  double gain = 0;
  for (int round = 0; round < LS_ROUNDS; round++) {
    struct ls_move mv = ls_best_move(&s);
    if (mv.n == 0 || !(mv.gain > LS_TOL * fabs(s.obj))) break;
    gain += ls_apply(&s, &mv);
  }
  *ret_gain = gain;
  err = 0;
out:
  free(in);
  free(s.set);
  free(s.tab);
  return err;
}

/* Two passes: the greedy on [lo, P_max] with `knots` points per curve puts
 * each job at a knot; for concave curves the optimum lies within about one
 * knot spacing of it, so a second greedy on a window of +-1 spacing around
 * each job refines the answer to (spacing / knots). The second pass is kept
 * only if it is better on the curves themselves, so it never hurts; it is
 * skipped when every curve is piecewise linear (the first pass is exact). */
static int optimal(const struct pflex_alloc_job *jobs, size_t n, const struct pflex__prep *pr,
                   double target, double min_w, unsigned knots, bool search, struct hull_cache *hc,
                   struct pflex__pass1 *p1, double *p, double *ret_gap) {
  size_t m = n ? n : 1;
  double *lo = pflex__hugepage_calloc(5 * m, sizeof *lo), obj, *known = NULL;
  if (!lo) return -ENOMEM;
  struct pass_mem mem = {0};
  double *hi = lo + m, *q = lo + 2 * m, *f = lo + 3 * m, *fq = lo + 4 * m;
  int err;
  bool exact = true;
  for (size_t i = 0; i < n; i++) {
    if (!jobs[i].curve) {
      err = -EINVAL;
      goto out;
    }
    lo[i] = pr[i].lo;
    hi[i] = pr[i].hi;
    if (!pflex_curve_piecewise_linear(jobs[i].curve)) exact = false;
  }
  bool concave = true;
  for (size_t i = 0; i < n && concave && search; i++)
    concave = known_concave(jobs[i].curve);
  double gap;
  size_t maxk;
  if ((err = pass_max_knots(jobs, n, knots, &maxk)) ||
      (err = greedy(jobs, n, pr, lo, hi, target - min_w, knots, maxk, hc, p1, &mem, p, &gap)))
    goto out;
  if (!exact) {
    double wsum = 0;
    for (size_t i = 0; i < n; i++) {
      double h = (pr[i].hi - pr[i].lo) / (knots - 1);
      lo[i] = pflex__fmax(pr[i].lo, p[i] - h);
      hi[i] = pflex__fmin(pr[i].hi, p[i] + h);
      wsum += lo[i];
    }
    double gap2;
    if (wsum <= target) {
      if ((err = greedy(jobs, n, pr, lo, hi, target - wsum, knots, maxk, hc, NULL, &mem, q, &gap2)))
        goto out;
      /* the better pass's values stay for the local search (f) */
      double vq = objective_into(jobs, n, q, fq), vp = objective_into(jobs, n, p, f);
      if (vq > vp) {
        memcpy(p, q, n * sizeof *p);
        memcpy(f, fq, n * sizeof *f);
      }
      obj = vq > vp ? vq : vp, known = &obj;
    }
  }
  if (search && !concave) {
    double gain;
    if ((err = local_search(jobs, n, pr, p, f, known, &gain))) goto out;
    gap = pflex__fmax(0.0, gap - gain);
  }
  *ret_gap = gap;
  err = 0;
out:
  pass_mem_free(&mem);
  free(lo);
  return err;
}

/* The exact oracle on the prepared bounds (alloc_oracle.c). When it could
 * not certify its answer (a node limit; past 1,024 jobs its samples are
 * coarser), the fast optimizer's answer may be better: the better of the two
 * on the curves is kept, its gap measured from the oracle's bound. */
static int oracle(const struct pflex_alloc_job *jobs, size_t n, const struct pflex__prep *pr,
                  double target, double min_w, unsigned knots, struct pflex_alloc_ctx *ctx,
                  double *p, double *ret_gap) {
  double *lo = malloc((n ? n : 1) * sizeof *lo), *hi = malloc((n ? n : 1) * sizeof *hi), gap;
  int err = lo && hi ? 0 : -ENOMEM;
  for (size_t i = 0; i < n && !err; i++) {
    if (!jobs[i].curve) err = -EINVAL;
    lo[i] = pr[i].lo;
    hi[i] = pr[i].hi;
  }
  if (!err) err = pflex__alloc_oracle(jobs, n, lo, hi, target, ctx ? &ctx->oracle : NULL, p, &gap);
  double vp = err ? 0 : objective(jobs, n, p);
  if (!err && gap > PFLEX__ORACLE_TOL * fabs(vp)) {
    double g2, *q = lo; /* lo is free again */
    err = optimal(jobs, n, pr, target, min_w, knots, true, ctx ? &ctx->hulls : NULL, NULL, q, &g2);
    double vq = err ? 0 : objective(jobs, n, q);
    if (!err && vq > vp) {
      memcpy(p, q, n * sizeof *p);
      gap = pflex__fmax(0.0, vp + gap - vq);
    }
  }
  if (!err) *ret_gap = gap;
  free(lo);
  free(hi);
  return err;
}

/* ---- common ---------------------------------------------------------------- */

void pflex__alloc_enforce_target(double *p, const double *lo, size_t lo_stride, size_t n,
                                 double target) {
  for (int iter = 0; iter < 8; iter++) {
    double s = 0;
    for (size_t i = 0; i < n; i++)
      s += p[i];
    if (s <= target) return;
    double excess = (s - target) + 4 * DBL_EPSILON * fabs(s) + DBL_MIN;
    for (size_t i = 0; i < n && excess > 0; i++) {
      double d = pflex__fmin(p[i] - lo[i * lo_stride], excess);
      if (d > 0) {
        p[i] -= d;
        excess -= d;
      }
    }
  }
}

int pflex_alloc_target_for_cut(const struct pflex_alloc_job *jobs, size_t n, double cut,
                               double *ret_target_w) {
  if (!(cut >= 0 && cut <= 1)) return -EINVAL;
  double s = 0;
  for (size_t i = 0; i < n; i++) {
    double pm = jobs[i].p_max > 0 ? jobs[i].p_max
                                  : (jobs[i].curve ? pflex_curve_p_max(jobs[i].curve) : NAN);
    if (!isfinite(pm)) return -EINVAL;
    s += pm;
  }
  *ret_target_w = (1.0 - cut) * s;
  return 0;
}

/* Each job's result from its power p[i] (throughput and cap unless the
 * options skip them), and the summary's totals. */
static void fill_results(const struct pflex_alloc_job *jobs, size_t n, const struct pflex__prep *pr,
                         const double *p, const struct pflex_alloc_opts *opts,
                         struct pflex_alloc_result *results, struct pflex_alloc_summary *sum) {
  bool skip_tput = opts && opts->skip_tput, skip_caps = opts && opts->skip_caps;
  for (size_t i = 0; i < n; i++) {
    const struct pflex_curve *c = jobs[i].curve;
    struct pflex_alloc_result *r = &results[i];
    r->power_w = p[i];
    r->floor_w = pr[i].lo;
    r->tput = c && !skip_tput ? pflex_curve_eval(c, p[i]) : NAN;
    if (skip_caps)
      r->cap_w = NAN;
    else if (c)
      r->cap_w = pflex_curve_cap_for_power(c, p[i], jobs[i].gpus, pr[i].cap_min, pr[i].cap_max);
    else
      r->cap_w = p[i] >= pr[i].hi
                     ? pr[i].cap_max
                     : pflex__fmin(pflex__fmax(p[i] / jobs[i].gpus, pr[i].cap_min), pr[i].cap_max);
    sum->total_w += p[i];
    sum->total_tput += r->tput;
    sum->weighted_tput += jobs[i].weight * r->tput;
  }
}

int pflex_alloc_run(const struct pflex_alloc_job *jobs, size_t n,
                    enum pflex_alloc_strategy strategy, double target_w,
                    const struct pflex_alloc_opts *opts, struct pflex_alloc_result *results,
                    struct pflex_alloc_summary *summary) {
  if ((!jobs && n) || !results || isnan(target_w) || (unsigned)strategy >= PFLEX_ALLOC_NSTRATEGIES)
    return -EINVAL;
  unsigned knots = opts && opts->knots ? opts->knots : PFLEX__ALLOC_DEFAULT_KNOTS;
  if (knots < 2) knots = 2;
  struct pflex__prep *pr = pflex__hugepage_malloc(n ? n : 1, sizeof *pr);
  double *p = pflex__hugepage_malloc(n ? n : 1, sizeof *p), *w = NULL;
  int err = -ENOMEM;
  if (!pr || !p) goto out;
  if (opts && opts->ctx) opts->ctx->hulls.call++;
  double min_w, max_w, gap = 0;
  bool floor_bad;
  struct pflex__pass1 *p1 = NULL;
  if (opts && opts->prepared)
    err = pflex__alloc_prepared_take(opts->prepared, jobs, n, pr, &min_w, &max_w, &floor_bad, &p1);
  else
    err = pflex__alloc_prepare(jobs, n, pr, &min_w, &max_w, &floor_bad);
  if (err) goto out;
  struct pflex_alloc_summary sum = {.target_w = target_w,
                                    .min_w = min_w,
                                    .max_w = max_w,
                                    .deepest_cut = max_w > 0 ? 1.0 - min_w / max_w : 0};
  if (floor_bad || target_w < min_w) {
    if (summary) *summary = sum;
    err = -PFLEX_E_INFEASIBLE;
    goto out;
  }
  if (target_w >= max_w) {
    for (size_t i = 0; i < n; i++)
      p[i] = pr[i].hi;
  } else if (strategy == PFLEX_ALLOC_ORACLE) {
    if ((err = oracle(jobs, n, pr, target_w, min_w, knots, opts ? opts->ctx : NULL, p, &gap)))
      goto out;
  } else if (strategy == PFLEX_ALLOC_OPTIMAL) {
    if ((err = optimal(jobs, n, pr, target_w, min_w, knots, !(opts && opts->no_local_search),
                       opts && opts->ctx ? &opts->ctx->hulls : NULL, p1, p, &gap)))
      goto out;
  } else {
    err = -ENOMEM;
    if (!(w = pflex__hugepage_malloc(n, sizeof *w))) goto out;
    if ((err = share_weights(jobs, n, pr, strategy, w))) goto out;
    if ((err = water_fill(pr, w, n, max_w - target_w, p))) goto out;
  }
  pflex__alloc_enforce_target(p, &pr[0].lo, sizeof *pr / sizeof(double), n, target_w);
  sum.gap_bound = gap;
  fill_results(jobs, n, pr, p, opts, results, &sum);
  if (summary) *summary = sum;
  err = 0;
out:
  free(pr);
  free(p);
  free(w);
  return err;
}
