/* Unit tests of named features and the per-group data set (src/core/features.c). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pflex/features.h"

#define CLOSE(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))

static void add(struct pflex_runset *s, const char *group, const char *set, enum pflex_arch a,
                enum pflex_task t, int gpus, double cap, double p, double tput) {
  struct pflex_run r = {.group = (char *)group,
                        .gpu = "H200",
                        .gpus = gpus,
                        .cap_w = cap,
                        .power_w = p,
                        .tput = tput,
                        .arch = a,
                        .task = t,
                        .set = (char *)set};
  assert_int_equal(pflex_runset_append(s, &r), 0);
}

static void setx(struct pflex_runset *s, size_t i, const char *col, const char *v) {
  assert_int_equal(pflex_runset_set_extra(s, i, col, v), 0);
}

/* dram_active 0.5 and mem_copy_util 40 (a percent: another run has 60):
 * dram_copy = 0.5 x 0.40 = 0.2; arith_intensity = 0.3 / 0.5 = 0.6. The same
 * telemetry as fractions gives the same numbers. */
static void test_derived(void **state) {
  (void)state;
  struct pflex_runset s;
  pflex_runset_init(&s);
  add(&s, "a", NULL, PFLEX_ARCH_MOE, PFLEX_TASK_FT, 16, 700, 8000, 100);
  add(&s, "b", NULL, PFLEX_ARCH_DENSE, PFLEX_TASK_PT, 8, 700, 5000, 100);
  setx(&s, 0, "dram_active", "0.5");
  setx(&s, 0, "mem_copy_util", "40");
  setx(&s, 0, "pipe_tensor_active", "0.3");
  setx(&s, 1, "dram_active", "0.25");
  setx(&s, 1, "mem_copy_util", "60");
  setx(&s, 1, "pipe_tensor_active", "0");
  double v;
  assert_int_equal(pflex_feature_value(&s, 0, "dram_copy", &v, NULL), 0);
  CLOSE(v, 0.2, 1e-15);
  assert_int_equal(pflex_feature_value(&s, 0, "arith_intensity", &v, NULL), 0);
  CLOSE(v, 0.6, 1e-15);
  assert_int_equal(pflex_feature_value(&s, 1, "dram_copy", &v, NULL), 0);
  CLOSE(v, 0.15, 1e-15);
  assert_int_equal(pflex_feature_value(&s, 0, "arch_moe", &v, NULL), 0);
  CLOSE(v, 1, 0);
  assert_int_equal(pflex_feature_value(&s, 1, "arch_moe", &v, NULL), 0);
  CLOSE(v, 0, 0);
  assert_int_equal(pflex_feature_value(&s, 0, "task_ft", &v, NULL), 0);
  CLOSE(v, 1, 0);
  assert_int_equal(pflex_feature_value(&s, 0, "log_gpus", &v, NULL), 0);
  CLOSE(v, log(16.0), 1e-15);
  /* Any column by name, verbatim (no percent scaling). */
  assert_int_equal(pflex_feature_value(&s, 0, "mem_copy_util", &v, NULL), 0);
  CLOSE(v, 40, 0);

  /* Fractions throughout. */
  setx(&s, 0, "mem_copy_util", "0.4");
  setx(&s, 1, "mem_copy_util", "0.6");
  assert_int_equal(pflex_feature_value(&s, 0, "dram_copy", &v, NULL), 0);
  CLOSE(v, 0.2, 1e-15);

  /* Out of range and division by zero. */
  setx(&s, 1, "dram_active", "0");
  struct pflex_diag d;
  pflex_diag_clear(&d);
  assert_int_equal(pflex_feature_value(&s, 1, "arith_intensity", &v, &d), -EDOM);
  assert_string_equal(d.column, "dram_active");
  setx(&s, 1, "mem_copy_util", "150");
  assert_int_equal(pflex_feature_value(&s, 1, "dram_copy", &v, &d), -ERANGE);
  assert_string_equal(d.column, "mem_copy_util");
  pflex_runset_release(&s);
}

/* Two groups; a's PFI: uncapped (5000 W, 100), 500 W run (4000, 90) gives
 * (1 - 0.8)/(1 - 0.9) = 2, 300 W run (3000, 100) has T = T_max and is left out:
 * PFI 2. b's: (3000, 80) -> (1 - 0.6)/(1 - 0.8) = 2 and (4000, 95) ->
 * (1 - 0.8)/(1 - 0.95) = 4: PFI 3. c is only in the validation set. */
static void build_sweeps(struct pflex_runset *s) {
  pflex_runset_init(s);
  add(s, "a", "headline", PFLEX_ARCH_DENSE, PFLEX_TASK_PT, 8, 700, 5000, 100);
  add(s, "a", "headline", PFLEX_ARCH_DENSE, PFLEX_TASK_PT, 8, 500, 4000, 90);
  add(s, "a", "headline", PFLEX_ARCH_DENSE, PFLEX_TASK_PT, 8, 300, 3000, 100);
  add(s, "b", "headline", PFLEX_ARCH_MOE, PFLEX_TASK_FT, 8, 300, 3000, 80);
  add(s, "b", "headline", PFLEX_ARCH_MOE, PFLEX_TASK_FT, 8, 700, 5000, 100);
  add(s, "b", "headline", PFLEX_ARCH_MOE, PFLEX_TASK_FT, 8, 500, 4000, 95);
  add(s, "c", "validation", PFLEX_ARCH_MOE, PFLEX_TASK_PT, 8, 700, 5000, 100);
  const char *dram[] = {"0.6", "0.5", "0.4", "0.3", "0.7", "0.2", "0.1"};
  for (size_t i = 0; i < 7; i++) {
    setx(s, i, "dram_active", dram[i]);
    setx(s, i, "mem_copy_util", "0.5");
    setx(s, i, "provenance", "reconstructed");
    setx(s, i, "power_w_sd", "1.5");
  }
  setx(s, 0, "sm_active", "0.9");
  setx(s, 4, "sm_active", "");
}

static void test_dataset_targets_and_features(void **state) {
  (void)state;
  struct pflex_runset s;
  build_sweeps(&s);
  struct pflex_featlist f;
  struct pflex_diag d;
  pflex_diag_clear(&d);
  assert_int_equal(pflex_featlist_parse("dram_copy,meta", &s, NULL, 0, &f, &d), 0);
  assert_int_equal(f.n, 4);
  assert_string_equal(f.names[1], "arch_moe");
  assert_string_equal(f.names[3], "log_gpus");
  struct pflex_dataset ds;
  assert_int_equal(pflex_dataset_build(&s, "headline", &f, NULL, true, &ds, &d), 0);
  assert_int_equal(ds.n, 2);
  assert_string_equal(ds.groups[0], "a");
  CLOSE(ds.y[0], 2.0, 1e-12);
  CLOSE(ds.y[1], 3.0, 1e-12);
  /* Features from the uncapped runs: a's is run 0 (dram 0.6), b's run 4 (0.7). */
  CLOSE(ds.x[0], 0.6 * 0.5, 1e-15);
  CLOSE(ds.x[4 + 0], 0.7 * 0.5, 1e-15);
  CLOSE(ds.x[4 + 1], 1.0, 0);
  assert_int_equal(ds.uncapped[1], 4);
  assert_int_equal(ds.nruns[0], 3);
  pflex_dataset_release(&ds);

  /* Without the filter, c is a group with one run: no PFI (NAN) unless needed. */
  assert_int_equal(pflex_dataset_build(&s, NULL, &f, NULL, false, &ds, &d), 0);
  assert_int_equal(ds.n, 3);
  assert_true(isnan(ds.y[2]));
  pflex_dataset_release(&ds);
  assert_int_equal(pflex_dataset_build(&s, NULL, &f, NULL, true, &ds, &d), -PFLEX_E_NOPOINTS);
  assert_non_null(strstr(d.message, "'c'"));
  assert_int_equal(pflex_dataset_build(&s, "h100", &f, NULL, false, &ds, &d), -PFLEX_E_NOPOINTS);
  pflex_featlist_release(&f);
  pflex_runset_release(&s);
}

static void test_missing_feature(void **state) {
  (void)state;
  struct pflex_runset s;
  build_sweeps(&s);
  struct pflex_featlist f;
  pflex_featlist_init(&f);
  assert_int_equal(pflex_featlist_add(&f, "sm_active"), 0);
  struct pflex_diag d;
  pflex_diag_clear(&d);
  struct pflex_dataset ds;
  /* a's uncapped run has sm_active, b's is empty. */
  assert_int_equal(pflex_dataset_build(&s, "headline", &f, NULL, true, &ds, &d), -ENODATA);
  assert_non_null(strstr(d.message, "group 'b'"));
  assert_non_null(strstr(d.message, "feature 'sm_active'"));
  assert_string_equal(d.column, "sm_active");
  pflex_featlist_release(&f);
  assert_int_equal(pflex_featlist_add(&f, "nvlink_tx_bytes"), 0);
  assert_int_equal(pflex_dataset_build(&s, "headline", &f, NULL, true, &ds, &d), -ENOENT);
  assert_non_null(strstr(d.message, "group 'a', feature 'nvlink_tx_bytes'"));
  assert_non_null(strstr(d.message, "no such column"));
  pflex_featlist_release(&f);
  pflex_runset_release(&s);
}

static void test_dcgm_expansion(void **state) {
  (void)state;
  struct pflex_runset s;
  build_sweeps(&s);
  struct pflex_featlist f;
  struct pflex_diag d;
  const size_t uncapped[] = {0, 4};
  /* sm_active is empty on run 4, provenance is text, power_w_sd is not telemetry. */
  assert_int_equal(pflex_featlist_parse("dcgm", &s, uncapped, 2, &f, &d), 0);
  assert_int_equal(f.n, 2);
  assert_string_equal(f.names[0], "dram_active");
  assert_string_equal(f.names[1], "mem_copy_util");
  pflex_featlist_release(&f);
  /* With only run 0, sm_active counts. Duplicates are dropped. */
  assert_int_equal(pflex_featlist_parse("dram_active,dcgm", &s, uncapped, 1, &f, &d), 0);
  assert_int_equal(f.n, 3);
  assert_string_equal(f.names[2], "sm_active");
  pflex_featlist_release(&f);
  assert_int_equal(pflex_featlist_parse("dram_copy,,x", &s, NULL, 0, &f, &d), -EINVAL);
  pflex_runset_release(&s);
}

/* The target follows the PFI options. Uncapped (5000 W, 100); 600 W (4800, 99.9):
 * PFI_i = (1 - 0.96)/(1 - 0.999) = 40, a drop of 0.1% that is within noise
 * (default relative SE 0.5% per throughput); 400 W (3000, 80): (1 - 0.6)/0.2 = 2.
 * The paper's rule keeps both: (40 + 2)/2 = 21; the noise rule drops 600 W: 2. */
static void test_dataset_target_rule(void **state) {
  (void)state;
  struct pflex_runset s;
  pflex_runset_init(&s);
  add(&s, "a", NULL, PFLEX_ARCH_DENSE, PFLEX_TASK_PT, 8, 700, 5000, 100);
  add(&s, "a", NULL, PFLEX_ARCH_DENSE, PFLEX_TASK_PT, 8, 600, 4800, 99.9);
  add(&s, "a", NULL, PFLEX_ARCH_DENSE, PFLEX_TASK_PT, 8, 400, 3000, 80);
  struct pflex_featlist none;
  pflex_featlist_init(&none);
  struct pflex_dataset ds;
  struct pflex_diag d;
  assert_int_equal(pflex_dataset_build(&s, NULL, &none, NULL, true, &ds, &d), 0);
  CLOSE(ds.y[0], 21.0, 1e-9);
  pflex_dataset_release(&ds);
  struct pflex_pfi_opts o;
  pflex_pfi_opts_init(&o);
  assert_int_equal(pflex_dataset_build(&s, NULL, &none, &o, true, &ds, &d), 0);
  CLOSE(ds.y[0], 2.0, 1e-12);
  pflex_dataset_release(&ds);
  pflex_runset_release(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_derived),
      cmocka_unit_test(test_dataset_targets_and_features),
      cmocka_unit_test(test_dataset_target_rule),
      cmocka_unit_test(test_missing_feature),
      cmocka_unit_test(test_dcgm_expansion),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
