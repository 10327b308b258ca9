/* Group statistics (include/pflex/stats.h). Formulas:
 * Kruskal-Wallis H = 12 / (N (N + 1)) * sum_j R_j^2 / n_j - 3 (N + 1), divided by
 * C = 1 - sum(t^3 - t) / (N^3 - N) over tie blocks of size t; p from chi-square
 * with k - 1 degrees of freedom. Dunn (1964): z = (Rbar_a - Rbar_b) / sqrt(
 * (N (N + 1) / 12 - sum(t^3 - t) / (12 (N - 1))) (1/n_a + 1/n_b)). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "pflex/stats.h"

/* Average ranks of x into ranks; *ret_ties (if not NULL) gets sum(t^3 - t). */
static int rank_ties(const double *x, size_t n, double *ranks, double *ret_ties) {
  if (!x || !ranks || n == 0) return -EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) return -EINVAL;
  size_t *idx = malloc(n * sizeof *idx);
  if (!idx) return -ENOMEM;
  gsl_sort_index(idx, x, 1, n);
  double ties = 0;
  for (size_t s = 0; s < n;) {
    size_t e = s + 1;
    while (e < n && x[idx[e]] == x[idx[s]])
      e++;
    double avg = (double)(s + 1 + e) / 2.0; /* mean of ranks s+1 .. e */
    for (size_t k = s; k < e; k++)
      ranks[idx[k]] = avg;
    double t = (double)(e - s);
    ties += t * t * t - t;
    s = e;
  }
  free(idx);
  if (ret_ties) *ret_ties = ties;
  return 0;
}

int pflex_stats_ranks(const double *x, size_t n, double *ret_ranks) {
  return rank_ties(x, n, ret_ranks, NULL);
}

int pflex_stats_spearman(const double *x, const double *y, size_t n, double *ret_rho) {
  if (!x || !y || !ret_rho || n < 2) return -EINVAL;
  double *rx = malloc(n * sizeof *rx), *ry = malloc(n * sizeof *ry);
  int err = -ENOMEM;
  if (!rx || !ry) goto out;
  if ((err = rank_ties(x, n, rx, NULL)) || (err = rank_ties(y, n, ry, NULL))) goto out;
  err = -EDOM;
  if (gsl_stats_variance(rx, 1, n) == 0 || gsl_stats_variance(ry, 1, n) == 0) goto out;
  *ret_rho = gsl_stats_correlation(rx, 1, ry, 1, n);
  err = 0;
out:
  free(rx);
  free(ry);
  return err;
}

int pflex_stats_median_mean(const double *x, size_t n, double *ret_median, double *ret_mean) {
  if (!x || n == 0) return -EINVAL;
  /* gsl_sort leaves NaN wherever it happens to fall: the median would be arbitrary. */
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) return -EINVAL;
  double *c = malloc(n * sizeof *c);
  if (!c) return -ENOMEM;
  memcpy(c, x, n * sizeof *c);
  gsl_sort(c, 1, n);
  double med = gsl_stats_median_from_sorted_data(c, 1, n), mean = gsl_stats_mean(c, 1, n);
  free(c);
  if (ret_median) *ret_median = med;
  if (ret_mean) *ret_mean = mean;
  return 0;
}

/* Pools the groups, ranks them, and gives each group's rank sum, N and the tie term. */
static int pooled_ranks(const double *const *groups, const size_t *sizes, size_t k,
                        double **ret_rsum, size_t *ret_n, double *ret_ties) {
  if (!groups || !sizes || k < 2) return -EINVAL;
  size_t n = 0;
  for (size_t j = 0; j < k; j++) {
    if (sizes[j] == 0 || !groups[j]) return -EINVAL;
    n += sizes[j];
  }
  if (n <= k) return -EINVAL;
  double *all = malloc(n * sizeof *all), *ranks = malloc(n * sizeof *ranks);
  double *rsum = calloc(k, sizeof *rsum);
  int err = -ENOMEM;
  if (!all || !ranks || !rsum) goto out;
  for (size_t j = 0, o = 0; j < k; j++)
    for (size_t i = 0; i < sizes[j]; i++)
      all[o++] = groups[j][i];
  if ((err = rank_ties(all, n, ranks, ret_ties))) goto out;
  for (size_t j = 0, o = 0; j < k; j++)
    for (size_t i = 0; i < sizes[j]; i++)
      rsum[j] += ranks[o++];
  *ret_rsum = rsum;
  rsum = NULL;
  *ret_n = n;
  err = 0;
out:
  free(all);
  free(ranks);
  free(rsum);
  return err;
}

int pflex_stats_kruskal(const double *const *groups, const size_t *sizes, size_t k,
                        struct pflex_kruskal *ret) {
  if (!ret) return -EINVAL;
  double *rsum, ties;
  size_t n;
  int err = pooled_ranks(groups, sizes, k, &rsum, &n, &ties);
  if (err) return err;
  double N = (double)n, s = 0;
  for (size_t j = 0; j < k; j++)
    s += rsum[j] * rsum[j] / (double)sizes[j];
  free(rsum);
  double h = 12.0 / (N * (N + 1)) * s - 3.0 * (N + 1);
  double c = 1.0 - ties / (N * N * N - N);
  if (!(c > 0)) return -EDOM;
  *ret = (struct pflex_kruskal){.h = h / c,
                                .h_raw = h,
                                .tie_factor = c,
                                .df = (int)(k - 1),
                                .p = gsl_cdf_chisq_Q(h / c, (double)(k - 1)),
                                .n = n};
  return 0;
}

int pflex_stats_holm(const double *p, size_t m, double *ret_adj) {
  if (!p || !ret_adj || m == 0) return -EINVAL;
  for (size_t j = 0; j < m; j++)
    if (!(p[j] >= 0 && p[j] <= 1)) return -EINVAL; /* NaN too */
  size_t *idx = malloc(m * sizeof *idx);
  double *adj = malloc(m * sizeof *adj);
  if (!idx || !adj) {
    free(idx);
    free(adj);
    return -ENOMEM;
  }
  gsl_sort_index(idx, p, 1, m);
  /* Step down: the j-th smallest p is multiplied by m - j, and the adjusted
   * values are made monotone so a smaller raw p never gets a larger adjusted one. */
  double run = 0;
  for (size_t j = 0; j < m; j++) {
    double v = fmin(1.0, (double)(m - j) * p[idx[j]]);
    run = fmax(run, v);
    adj[idx[j]] = run;
  }
  memcpy(ret_adj, adj, m * sizeof *adj);
  free(idx);
  free(adj);
  return 0;
}

int pflex_stats_dunn(const double *const *groups, const size_t *sizes, size_t k,
                     struct pflex_dunn_pair *ret_pairs) {
  if (!ret_pairs) return -EINVAL;
  double *rsum, ties;
  size_t n;
  int err = pooled_ranks(groups, sizes, k, &rsum, &n, &ties);
  if (err) return err;
  double N = (double)n;
  double var = N * (N + 1) / 12.0 - ties / (12.0 * (N - 1));
  size_t m = k * (k - 1) / 2;
  struct pflex_dunn_pair *pairs = malloc(m * sizeof *pairs);
  double *praw = malloc(m * sizeof *praw);
  err = -ENOMEM;
  if (!pairs || !praw) goto out;
  err = -EDOM;
  if (!(var > 0)) goto out;
  size_t q = 0;
  for (size_t a = 0; a < k; a++)
    for (size_t b = a + 1; b < k; b++, q++) {
      double se = sqrt(var * (1.0 / (double)sizes[a] + 1.0 / (double)sizes[b]));
      double z = (rsum[a] / (double)sizes[a] - rsum[b] / (double)sizes[b]) / se;
      praw[q] = 2.0 * gsl_cdf_ugaussian_Q(fabs(z));
      pairs[q] = (struct pflex_dunn_pair){.a = a, .b = b, .z = z, .p_raw = praw[q]};
    }
  double *adj = praw; /* Holm may alias its input */
  if ((err = pflex_stats_holm(praw, m, adj))) goto out;
  for (q = 0; q < m; q++)
    pairs[q].p_holm = adj[q];
  memcpy(ret_pairs, pairs, m * sizeof *pairs);
  err = 0;
out:
  free(rsum);
  free(pairs);
  free(praw);
  return err;
}

int pflex_stats_compare_groups(const double *const *groups, const size_t *sizes, size_t ngroups,
                               struct pflex_stats_compare *ret) {
  if (!ret || ngroups > PFLEX_STATS_COMPARE_MAX) return -EINVAL;
  struct pflex_stats_compare c = {0};
  const double *gv[PFLEX_STATS_COMPARE_MAX];
  for (size_t j = 0; j < ngroups; j++) {
    if (!sizes[j]) continue;
    int err = pflex_stats_median_mean(groups[j], sizes[j], &c.median[c.k], &c.mean[c.k]);
    if (err) return err;
    gv[c.k] = groups[j];
    c.n[c.k] = sizes[j];
    c.which[c.k++] = j;
    c.total += sizes[j];
  }
  c.npairs = c.k * (c.k - 1) / 2;
  c.kruskal_err = c.k >= 2 ? pflex_stats_kruskal(gv, c.n, c.k, &c.kruskal) : -EINVAL;
  c.dunn_err = c.kruskal_err ? c.kruskal_err : pflex_stats_dunn(gv, c.n, c.k, c.pairs);
  *ret = c;
  return 0;
}
