/* Unit tests of the in-memory runset and grouping (src/core/runs.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pflex/runs.h"

static struct pflex_run mkrun(const char *group, double cap, double p, double t) {
  return (struct pflex_run){
      .group = (char *)group, .gpu = "H200", .gpus = 8, .cap_w = cap, .power_w = p, .tput = t};
}

static void test_groups_sorted_by_cap(void **state) {
  (void)state;
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_run r[] = {mkrun("a", 700, 5000, 100), mkrun("b", 200, 1500, 40),
                          mkrun("a", 300, 2300, 70), mkrun("b", 700, 4800, 90),
                          mkrun("a", 500, 3800, 95)};
  for (size_t i = 0; i < 5; i++)
    assert_int_equal(pflex_runset_append(&set, &r[i]), 0);
  struct pflex_group *g;
  size_t ng;
  assert_int_equal(pflex_runset_groups(&set, &g, &ng), 0);
  assert_int_equal(ng, 2);
  assert_string_equal(g[0].name, "a");
  assert_int_equal(g[0].n, 3);
  assert_int_equal(g[0].runs[0], 2); /* 300 W first */
  assert_int_equal(g[0].runs[1], 4);
  assert_int_equal(g[0].uncapped, 0);
  assert_int_equal(g[1].uncapped, 3);
  pflex_groups_free(g, ng);
  pflex_runset_release(&set);
}

/* Equal caps (possible only in a runset that skipped validation) keep their
 * order of appearance, whatever qsort does with ties. */
static void test_groups_ties_keep_order(void **state) {
  (void)state;
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_run r[] = {mkrun("a", 500, 3000, 80), mkrun("a", 700, 5000, 100),
                          mkrun("a", 500, 3100, 81), mkrun("a", 200, 1500, 40),
                          mkrun("a", 500, 3200, 82)};
  for (size_t i = 0; i < 5; i++)
    assert_int_equal(pflex_runset_append(&set, &r[i]), 0);
  struct pflex_group *g;
  size_t ng;
  assert_int_equal(pflex_runset_groups(&set, &g, &ng), 0);
  assert_int_equal(ng, 1);
  size_t want[] = {3, 0, 2, 4, 1}; /* 200 W, the three 500 W in file order, 700 W */
  for (size_t k = 0; k < 5; k++)
    assert_int_equal(g[0].runs[k], want[k]);
  assert_int_equal(g[0].uncapped, 1);
  pflex_groups_free(g, ng);
  pflex_runset_release(&set);
}

/* Group rules on runs without lines (as from JSON): the diagnostic names the
 * run by position. Runs: 1 a/700, 2 a/300, 3 a/300 -> cap twice, runs 2 and 3. */
static void test_check_groups(void **state) {
  (void)state;
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_run r[] = {mkrun("a", 700, 5000, 100), mkrun("a", 300, 2300, 70),
                          mkrun("a", 300, 2400, 71)};
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(pflex_runset_append(&set, &r[i]), 0);
  struct pflex_diag diag;
  assert_int_equal(pflex_runset_check_groups(&set, false, &diag), -PFLEX_E_DATA);
  assert_int_equal(diag.line, 0);
  assert_string_equal(diag.column, "cap_w");
  assert_string_equal(diag.message, "run 3: group 'a' has cap 300 W twice (runs 2 and 3)");
  pflex_runset_release(&set);

  /* H200 whose highest cap is 600 W: no uncapped run, unless partial. With
   * lines (CSV), the line is named instead. */
  pflex_runset_init(&set);
  struct pflex_run q[] = {mkrun("b", 600, 4000, 90), mkrun("b", 300, 2300, 70)};
  q[0].line = 7;
  q[1].line = 8;
  for (size_t i = 0; i < 2; i++)
    assert_int_equal(pflex_runset_append(&set, &q[i]), 0);
  assert_int_equal(pflex_runset_check_groups(&set, false, &diag), -PFLEX_E_NOUNCAPPED);
  assert_int_equal(diag.line, 7);
  assert_non_null(strstr(diag.message, "no uncapped run"));
  assert_int_equal(pflex_runset_check_groups(&set, true, &diag), 0);
  /* A GPU type without a known TDP: the highest cap is the uncapped run. */
  /* (A run's strings are the runset's, never freed on their own: a caller
   * may point one elsewhere, at memory that outlives the runset.) */
  static char x9[] = "X9";
  set.runs[0].gpu = x9;
  set.runs[1].gpu = x9;
  assert_int_equal(pflex_runset_check_groups(&set, false, &diag), 0);
  /* Mixed GPU counts name the later run. */
  set.runs[1].gpus = 16;
  assert_int_equal(pflex_runset_check_groups(&set, false, &diag), -PFLEX_E_DATA);
  assert_int_equal(diag.line, 8);
  assert_string_equal(diag.column, "gpus");
  pflex_runset_release(&set);
}

static void test_extra_columns(void **state) {
  (void)state;
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_run r = mkrun("a", 700, 5000, 100);
  assert_int_equal(pflex_runset_append(&set, &r), 0);
  assert_int_equal(pflex_runset_append(&set, &r), 0);
  assert_int_equal(pflex_runset_set_extra(&set, 0, "dram_active", "0.42"), 0);
  assert_int_equal(pflex_runset_set_extra(&set, 1, "dram_active", "abc"), 0);
  double v = 0;
  assert_int_equal(pflex_runset_metric(&set, 0, "dram_active", &v), 0);
  assert_true(v == 0.42);
  assert_int_equal(pflex_runset_metric(&set, 1, "dram_active", &v), -EINVAL);
  assert_int_equal(pflex_runset_metric(&set, 0, "sm_active", &v), -ENOENT);
  assert_int_equal(pflex_runset_set_extra(&set, 0, "sm_active", ""), 0);
  assert_int_equal(pflex_runset_metric(&set, 1, "sm_active", &v), -ENODATA);
  assert_int_equal(set.nextra, 2);
  size_t k = 99;
  assert_int_equal(pflex_runset_find_column(&set, "sm_active", &k), 0);
  assert_int_equal(k, 1); /* registered second */
  assert_int_equal(pflex_runset_find_column(&set, "fb_used", &k), -ENOENT);
  assert_int_equal(k, 1); /* untouched on error */
  pflex_runset_release(&set);
}

/* Runs keep their own copies of every string (the runset's arena): a
 * caller's buffers may change after pflex_runset_append; columns added after
 * many runs give each run an empty cell; a replaced cell reads back. */
static void test_strings_are_copies(void **state) {
  (void)state;
  struct pflex_runset set;
  pflex_runset_init(&set);
  size_t k;
  assert_int_equal(pflex_runset_add_column(&set, "sm_active", &k), 0);
  enum { N = 3000 };
  char group[32], model[32], cell[32];
  char *extra[1] = {cell};
  for (size_t i = 0; i < N; i++) {
    snprintf(group, sizeof group, "g%zu", i / 6);
    snprintf(model, sizeof model, "m%zu", i);
    snprintf(cell, sizeof cell, "0.%zu", i);
    struct pflex_run r = mkrun(group, 700, 5000, 100);
    r.model = i % 2 ? model : NULL;
    r.extra = i % 3 ? extra : NULL; /* NULL: every cell empty */
    assert_int_equal(pflex_runset_append(&set, &r), 0);
    memset(group, 'x', sizeof group - 1), memset(model, 'x', sizeof model - 1);
    memset(cell, 'x', sizeof cell - 1);
  }
  assert_int_equal(pflex_runset_add_column(&set, "fb_used", &k), 0);
  assert_int_equal(k, 1);
  assert_int_equal(pflex_runset_set_extra(&set, N - 1, "fb_used", "81463"), 0);
  char want[32];
  for (size_t i = 0; i < N; i++) {
    const struct pflex_run *r = &set.runs[i];
    snprintf(want, sizeof want, "g%zu", i / 6);
    assert_string_equal(r->group, want);
    assert_string_equal(r->gpu, "H200");
    if (i % 2) {
      snprintf(want, sizeof want, "m%zu", i);
      assert_string_equal(r->model, want);
    } else {
      assert_null(r->model);
    }
    snprintf(want, sizeof want, "0.%zu", i);
    assert_string_equal(r->extra[0], i % 3 ? want : "");
    assert_string_equal(r->extra[1], i == N - 1 ? "81463" : "");
  }
  pflex_runset_release(&set);
  assert_int_equal(set.n, 0);
  assert_null(set.strings);
}

/* The grouping kept between calls: the same groups again, and a runset
 * changed since (a run appended to a new group, then to an old one) is
 * grouped afresh. */
static void test_groups_kept_until_change(void **state) {
  (void)state;
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_run r[] = {mkrun("a", 700, 5000, 100), mkrun("b", 700, 4800, 90),
                          mkrun("a", 300, 2300, 70)};
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(pflex_runset_append(&set, &r[i]), 0);
  struct pflex_group *g1, *g2;
  size_t n1, n2;
  assert_int_equal(pflex_runset_groups(&set, &g1, &n1), 0);
  assert_int_equal(pflex_runset_groups(&set, &g2, &n2), 0);
  assert_int_equal(n1, 2);
  assert_int_equal(n2, 2);
  for (size_t j = 0; j < 2; j++) {
    assert_string_equal(g1[j].name, g2[j].name);
    assert_int_equal(g1[j].n, g2[j].n);
    assert_memory_equal(g1[j].runs, g2[j].runs, g1[j].n * sizeof *g1[j].runs);
    assert_int_equal(g1[j].uncapped, g2[j].uncapped);
  }
  pflex_groups_free(g1, n1);
  pflex_groups_free(g2, n2);
  struct pflex_run c = mkrun("c", 700, 4000, 80), a = mkrun("a", 500, 3800, 95);
  assert_int_equal(pflex_runset_append(&set, &c), 0);
  assert_int_equal(pflex_runset_groups(&set, &g1, &n1), 0);
  assert_int_equal(n1, 3);
  assert_string_equal(g1[2].name, "c");
  pflex_groups_free(g1, n1);
  assert_int_equal(pflex_runset_append(&set, &a), 0);
  assert_int_equal(pflex_runset_groups(&set, &g1, &n1), 0);
  assert_int_equal(n1, 3);
  assert_int_equal(g1[0].n, 3); /* a: caps 300, 500, 700 */
  assert_int_equal(g1[0].runs[1], 4);
  pflex_groups_free(g1, n1);
  pflex_runset_release(&set);
}

static void test_arch_task_parse(void **state) {
  (void)state;
  enum pflex_arch a = PFLEX_ARCH_UNKNOWN;
  enum pflex_task t = PFLEX_TASK_UNKNOWN;
  assert_int_equal(pflex_arch_parse("MoE", &a), 0);
  assert_int_equal(a, PFLEX_ARCH_MOE);
  assert_int_equal(pflex_arch_parse("dense", &a), 0);
  assert_int_equal(a, PFLEX_ARCH_DENSE);
  assert_int_equal(pflex_arch_parse("sparse", &a), -EINVAL);
  assert_int_equal(a, PFLEX_ARCH_DENSE); /* untouched on error */
  assert_int_equal(pflex_task_parse("Pretraining", &t), 0);
  assert_int_equal(t, PFLEX_TASK_PT);
  assert_int_equal(pflex_task_parse("lora", &t), 0);
  assert_int_equal(t, PFLEX_TASK_FT);
  assert_int_equal(pflex_task_parse("inference", &t), -EINVAL);
  assert_int_equal(pflex_task_parse(NULL, &t), -EINVAL);
  assert_int_equal(t, PFLEX_TASK_FT);
}

/* The one unit table: in enum order (the CLI lists its names by index), every
 * name, key and column distinct, the stable keys and columns as the formats
 * define them, and the lookups agree with it. */
static void test_tput_unit_table(void **state) {
  (void)state;
  static const char *const keys[] = {"tokens_per_s", "samples_per_s", "steps_per_s",
                                     "per_step_time"};
  static const char *const columns[] = {"tokens_per_s", "samples_per_s", "steps_per_s",
                                        "s_per_step"};
  size_t n = 0;
  for (const struct pflex_tput_unit_info *u; (u = pflex_tput_unit_at(n)); n++) {
    assert_int_equal(u->unit, n);
    assert_ptr_equal(pflex_tput_unit_info(u->unit), u);
    assert_string_equal(u->key, keys[n]);
    assert_string_equal(u->column, columns[n]);
    assert_string_equal(pflex_tput_unit_name(u->unit), u->label);
    assert_int_equal(pflex_tput_unit_absolute(u->unit), u->unit == PFLEX_TPUT_TOKENS_PER_S);
    enum pflex_tput_unit back;
    assert_int_equal(pflex_tput_unit_parse(u->name, &back), 0);
    assert_int_equal(back, u->unit);
    for (size_t k = 0; k < n; k++) {
      const struct pflex_tput_unit_info *o = pflex_tput_unit_at(k);
      assert_string_not_equal(o->name, u->name);
      assert_string_not_equal(o->sd_column, u->sd_column);
    }
  }
  assert_int_equal(n, 4);
  assert_null(pflex_tput_unit_info((enum pflex_tput_unit)4));
  assert_string_equal(pflex_tput_unit_name((enum pflex_tput_unit)4), "unknown");
  enum pflex_tput_unit u;
  assert_int_equal(pflex_tput_unit_parse("tokens/s", &u), -EINVAL);
  assert_int_equal(pflex_tput_unit_parse(NULL, &u), -EINVAL);
}

/* The hash grouping against the definition it replaced: groups in order of
 * first appearance found by a linear search, each group's runs sorted by cap
 * with ties in file order (insertion sort, stable). Many interleaved groups
 * of random sizes (up to 40 runs, so both the short and the long sort path
 * run), names that share prefixes and lengths, and repeated caps. */
static void test_groups_match_linear_definition(void **state) {
  (void)state;
  enum { NR = 6000, NG = 700 };
  struct pflex_runset set;
  pflex_runset_init(&set);
  char names[NG][24];
  for (size_t j = 0; j < NG; j++)
    snprintf(names[j], sizeof names[j], "g%zu-%zu", j % 37, j);
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < NR; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t j = (size_t)(x % NG);
    /* Group j takes about j / NG of the draws beyond the first few: uneven sizes. */
    if (j % 5 == 0) j = (size_t)((x >> 20) % 40);
    double cap = 200 + 50 * (double)((x >> 33) % 11);
    struct pflex_run r = mkrun(names[j], cap, cap * 8, cap);
    assert_int_equal(pflex_runset_append(&set, &r), 0);
  }
  /* Reference: linear search per run, then a stable insertion sort by cap. */
  size_t *owner = malloc(NR * sizeof *owner), *count = calloc(NR, sizeof *count);
  const char **gname = malloc(NR * sizeof *gname);
  assert_non_null(owner);
  assert_non_null(count);
  assert_non_null(gname);
  size_t ng_ref = 0;
  for (size_t i = 0; i < NR; i++) {
    size_t j = 0;
    while (j < ng_ref && strcmp(gname[j], set.runs[i].group) != 0)
      j++;
    if (j == ng_ref) gname[ng_ref++] = set.runs[i].group;
    owner[i] = j;
    count[j]++;
  }
  struct pflex_group *g;
  size_t ng;
  assert_int_equal(pflex_runset_groups(&set, &g, &ng), 0);
  assert_int_equal(ng, ng_ref);
  size_t *want = malloc(NR * sizeof *want);
  assert_non_null(want);
  bool long_group = false;
  for (size_t j = 0; j < ng; j++) {
    assert_string_equal(g[j].name, gname[j]);
    assert_int_equal(g[j].n, count[j]);
    long_group |= g[j].n > 16;
    size_t n = 0;
    for (size_t i = 0; i < NR; i++)
      if (owner[i] == j) {
        size_t m = n++;
        while (m > 0 && set.runs[want[m - 1]].cap_w > set.runs[i].cap_w) {
          want[m] = want[m - 1];
          m--;
        }
        want[m] = i;
      }
    for (size_t k = 0; k < n; k++)
      assert_int_equal(g[j].runs[k], want[k]);
    assert_int_equal(g[j].uncapped, want[n - 1]);
  }
  assert_true(long_group);
  free(want);
  free(owner);
  free(count);
  free(gname);
  pflex_groups_free(g, ng);
  pflex_runset_release(&set);
}

/* pflex_runset_column_over_one: cached, and the cache follows changes. */
static void test_column_over_one(void **state) {
  (void)state;
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_run r = mkrun("a", 700, 5000, 100);
  assert_int_equal(pflex_runset_append(&set, &r), 0);
  assert_int_equal(pflex_runset_append(&set, &r), 0);
  assert_int_equal(pflex_runset_set_extra(&set, 0, "util", "0.5"), 0);
  assert_int_equal(pflex_runset_set_extra(&set, 1, "util", ""), 0);
  size_t k;
  assert_int_equal(pflex_runset_find_column(&set, "util", &k), 0);
  assert_false(pflex_runset_column_over_one(&set, k));
  assert_false(pflex_runset_column_over_one(&set, k)); /* from the cache */
  assert_int_equal(pflex_runset_set_extra(&set, 1, "util", "42"), 0);
  assert_true(pflex_runset_column_over_one(&set, k));
  assert_int_equal(pflex_runset_set_extra(&set, 1, "util", "1"), 0);
  assert_false(pflex_runset_column_over_one(&set, k));
  assert_int_equal(pflex_runset_set_extra(&set, 1, "util", "inf"), 0);
  assert_false(pflex_runset_column_over_one(&set, k)); /* not a finite number */
  assert_int_equal(pflex_runset_set_extra(&set, 0, "other", "7"), 0);
  assert_false(pflex_runset_column_over_one(&set, k));
  assert_true(pflex_runset_column_over_one(&set, k + 1));
  assert_false(pflex_runset_column_over_one(&set, k + 2)); /* no such column */
  struct pflex_run big = mkrun("b", 700, 5000, 100);
  char *ex[] = {"99", "0"};
  big.extra = ex;
  assert_int_equal(pflex_runset_append(&set, &big), 0);
  assert_true(pflex_runset_column_over_one(&set, k));
  assert_true(pflex_runset_column_over_one(&set, k + 1)); /* "7" still there */
  pflex_runset_release(&set);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_groups_sorted_by_cap),
      cmocka_unit_test(test_groups_ties_keep_order),
      cmocka_unit_test(test_groups_match_linear_definition),
      cmocka_unit_test(test_column_over_one),
      cmocka_unit_test(test_check_groups),
      cmocka_unit_test(test_extra_columns),
      cmocka_unit_test(test_strings_are_copies),
      cmocka_unit_test(test_groups_kept_until_change),
      cmocka_unit_test(test_arch_task_parse),
      cmocka_unit_test(test_tput_unit_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
