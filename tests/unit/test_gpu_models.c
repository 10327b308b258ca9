/* Tests of the GPU table (include/pflex/gpu_models.h): the H100/H200 rows
 * are the numbers pflex used before the table, every row is consistent,
 * NVML's product names find the right board, an unknown type takes its
 * limits from the data, and the relative cap placement. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "pflex/gpu_models.h"

static void test_h100_h200_unchanged(void **state) {
  (void)state;
  const struct pflex_gpu_model *h200 = pflex_gpu_model_find("H200");
  const struct pflex_gpu_model *h100 = pflex_gpu_model_find("H100");
  assert_non_null(h200);
  assert_non_null(h100);
  /* paper.md section 7; the values curve.c and jobset.c used as constants */
  assert_float_equal(h200->limit_min_w, 200, 0);
  assert_float_equal(h200->default_limit_w, 700, 0);
  assert_float_equal(h200->idle_w, 75, 0);
  assert_float_equal(h100->limit_min_w, 200, 0);
  assert_float_equal(h100->default_limit_w, 700, 0);
  assert_float_equal(h100->idle_w, 79, 0);
  assert_int_equal(h200->estimated, 0);
}

static void test_rows_consistent(void **state) {
  (void)state;
  size_t n = pflex_gpu_model_count();
  assert_true(n >= 14);
  for (size_t i = 0; i < n; i++) {
    const struct pflex_gpu_model *m = pflex_gpu_model_get(i);
    assert_non_null(m);
    assert_true(m->limit_min_w > 0);
    assert_true(m->limit_min_w < m->default_limit_w);
    assert_true(m->default_limit_w <= m->limit_max_w);
    assert_true(m->idle_w > 0 && m->idle_w < m->limit_min_w);
    /* a row is found by its own name, and names are unique */
    assert_ptr_equal(pflex_gpu_model_find(m->name), m);
    for (size_t k = 0; k < i; k++)
      assert_string_not_equal(pflex_gpu_model_get(k)->name, m->name);
  }
  assert_null(pflex_gpu_model_get(n));
}

static void test_names(void **state) {
  (void)state;
  static const struct {
    const char *name, *want;
  } cases[] = {
      {"h200", "H200"},
      {"NVIDIA H200", "H200"},
      {"NVIDIA H200 NVL", "H200-NVL"},
      {"NVIDIA H100 80GB HBM3", "H100"},
      {"NVIDIA H100 PCIe", "H100-PCIE"},
      {"H100-PCIE", "H100-PCIE"},
      {"NVIDIA H100 NVL", "H100-NVL"},
      {"NVIDIA A100-SXM4-80GB", "A100"},
      {"NVIDIA A100-PCIE-40GB", "A100-PCIE-40GB"},
      {"NVIDIA A100 80GB PCIe", "A100-PCIE"},
      {"A100", "A100"},
      {"Tesla V100-SXM2-32GB", "V100"},
      {"Tesla V100-PCIE-32GB", "V100-PCIE"},
      {"Tesla P100-PCIE-16GB", "P100-PCIE"},
      {"Tesla T4", "T4"},
      {"NVIDIA A10", "A10"},
      {"NVIDIA A40", "A40"},
      {"NVIDIA L40S", "L40S"},
      {"NVIDIA B200", "B200"},
      {"NVIDIA GB200", "GB200"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct pflex_gpu_model *m = pflex_gpu_model_find(cases[i].name);
    assert_non_null(m);
    assert_string_equal(m->name, cases[i].want);
  }
  /* A10 is not A100, L40 is not L40S; unknown chips are unknown */
  assert_null(pflex_gpu_model_find("L40"));
  assert_null(pflex_gpu_model_find("MI300X"));
  assert_null(pflex_gpu_model_find("NVIDIA"));
  assert_null(pflex_gpu_model_find(""));
  assert_null(pflex_gpu_model_find(NULL));
}

static void test_resolve(void **state) {
  (void)state;
  struct pflex_gpu_limits l;
  assert_int_equal(pflex_gpu_limits_resolve("A100", 150, 300, &l), 0);
  assert_true(l.known);
  assert_float_equal(l.default_w, 400, 0); /* the table, not the data */
  assert_float_equal(l.min_w, 100, 0);
  /* unknown: the data's range, idle from the table's median share */
  assert_int_equal(pflex_gpu_limits_resolve("MI300X", 300, 750, &l), 0);
  assert_false(l.known);
  assert_float_equal(l.min_w, 300, 0);
  assert_float_equal(l.default_w, 750, 0);
  assert_float_equal(l.max_w, 750, 0);
  double s = pflex_gpu_idle_share();
  assert_true(s > 0.05 && s < 0.25);
  assert_float_equal(l.idle_w, s * 750, 1e-9);
  assert_int_equal(pflex_gpu_limits_resolve("MI300X", NAN, 750, &l), -EINVAL);
  assert_int_equal(pflex_gpu_limits_resolve("MI300X", 800, 750, &l), -EINVAL);
  assert_int_equal(pflex_gpu_limits_resolve(NULL, 0, 0, &l), -EINVAL);
}

static void test_cap_relative(void **state) {
  (void)state;
  /* exact on the paper's range: the H200 grid is unchanged to the bit */
  for (double c = 200; c <= 700; c += 100)
    assert_true(pflex_gpu_cap_relative(c, 200, 700) == c);
  assert_float_equal(pflex_gpu_cap_relative(200, 100, 400), 100, 0);
  assert_float_equal(pflex_gpu_cap_relative(700, 100, 400), 400, 0);
  assert_float_equal(pflex_gpu_cap_relative(450, 100, 400), 250, 1e-12);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_h100_h200_unchanged),
      cmocka_unit_test(test_rows_consistent),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_resolve),
      cmocka_unit_test(test_cap_relative),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
