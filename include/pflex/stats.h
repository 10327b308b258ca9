/* Group statistics on GSL (paper.md Tables 9-11; docs/pfi.md): ranks with
 * ties averaged, Spearman rho, the Kruskal-Wallis test with tie correction,
 * Dunn's post-hoc z test with Holm's step-down adjustment, medians and means. */
#ifndef PFLEX_STATS_H
#define PFLEX_STATS_H

#include <stddef.h>

/* 1-based ranks of x[0..n-1] into ret_ranks (n entries), tied values getting
 * the average of the ranks they span. -EINVAL on n == 0 or a non-finite value. */
int pflex_stats_ranks(const double *x, size_t n, double *ret_ranks);

/* Spearman's rho: the Pearson correlation of the average ranks of x and y.
 * -EINVAL on n < 2 or non-finite input, -EDOM when either side is constant. */
int pflex_stats_spearman(const double *x, const double *y, size_t n, double *ret_rho);

/* Median (mean of the two middle values for even n) and mean; -EINVAL on n == 0
 * or a non-finite value. */
int pflex_stats_median_mean(const double *x, size_t n, double *ret_median, double *ret_mean);

struct pflex_kruskal {
  double h;          /* tie-corrected H */
  double h_raw;      /* H before the tie correction */
  double tie_factor; /* C = 1 - sum(t^3 - t) / (N^3 - N) */
  int df;            /* groups - 1 */
  double p;          /* upper tail of chi-square(df) at h */
  size_t n;          /* N, all observations */
};

/* Kruskal-Wallis test of k >= 2 groups (groups[j] has sizes[j] >= 1 values,
 * N > k). -EINVAL on bad input, -EDOM when every value is tied (C == 0). */
int pflex_stats_kruskal(const double *const *groups, const size_t *sizes, size_t k,
                        struct pflex_kruskal *ret);

struct pflex_dunn_pair {
  size_t a, b;   /* group indexes, a < b */
  double z;      /* (mean rank of a - mean rank of b) / SE, tie-corrected variance */
  double p_raw;  /* two-sided normal p */
  double p_holm; /* Holm-adjusted over all k(k-1)/2 pairs */
};

/* Dunn's test for every pair of the k groups, ordered (0,1), (0,2), ..., (1,2), ...;
 * ret_pairs must hold k(k-1)/2 entries. Same input rules as pflex_stats_kruskal. */
int pflex_stats_dunn(const double *const *groups, const size_t *sizes, size_t k,
                     struct pflex_dunn_pair *ret_pairs);

/* Holm's step-down adjustment of m p-values into ret_adj (m entries; may alias p).
 * -EINVAL on m == 0 or a value outside [0, 1] (NaN included). */
int pflex_stats_holm(const double *p, size_t m, double *ret_adj);

/* The comparison of the paper's Tables 10 and 11 over up to
 * PFLEX_STATS_COMPARE_MAX groups of values, of which the empty ones are left
 * out: each compared group's size, median and mean, the Kruskal-Wallis test
 * and Dunn's pairs over the compared groups. */
#define PFLEX_STATS_COMPARE_MAX 8
struct pflex_stats_compare {
  size_t k;                              /* groups compared (non-empty) */
  size_t which[PFLEX_STATS_COMPARE_MAX]; /* their input indexes, in input order */
  size_t n[PFLEX_STATS_COMPARE_MAX];     /* their sizes */
  double median[PFLEX_STATS_COMPARE_MAX], mean[PFLEX_STATS_COMPARE_MAX];
  size_t total;    /* values in all compared groups */
  int kruskal_err; /* 0, or why there is no test (see below) */
  struct pflex_kruskal kruskal;
  int dunn_err;  /* 0 when pairs hold Dunn's test */
  size_t npairs; /* k(k-1)/2 */
  struct pflex_dunn_pair pairs[PFLEX_STATS_COMPARE_MAX * (PFLEX_STATS_COMPARE_MAX - 1) / 2];
};
/* Compares the ngroups groups (groups[j] has sizes[j] >= 0 values; pair
 * indexes a, b count compared groups, map them through which[]). No test
 * (kruskal_err, and dunn_err alike) is -EINVAL with fewer than two non-empty
 * groups or too few values, -EDOM when every value is tied. Returns -EINVAL
 * only on bad input (more than PFLEX_STATS_COMPARE_MAX groups, a non-finite
 * value), else 0. */
int pflex_stats_compare_groups(const double *const *groups, const size_t *sizes, size_t ngroups,
                               struct pflex_stats_compare *ret);
#endif
