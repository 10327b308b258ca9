/* Unit tests of pflex_format_double (src/base/format.c): its fast path for
 * short decimals must give the same text as the %.*g loop it skips, on every
 * kind of value (short decimals at every magnitude, arbitrary doubles, the
 * ends of the fast path's range, non-finite values), and the text reads back
 * as the same double. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pflex/format.h"

/* The definition: the shortest %.*g text, 6 to 17 digits, that reads back as v. */
static void reference(char *buf, size_t size, double v) {
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(buf, size, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) return;
  }
}

static size_t checked;

static void check(double v) {
  char want[PFLEX_FORMAT_NUM_MAX], got[PFLEX_FORMAT_NUM_MAX];
  reference(want, sizeof want, v);
  pflex_format_double(got, sizeof got, v);
  if (strcmp(want, got) != 0) fprintf(stderr, "%.17g: want '%s', got '%s'\n", v, want, got);
  assert_string_equal(got, want);
  checked++;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) { /* xorshift64 */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void test_edges(void **state) {
  (void)state;
  const double v[] = {0.0,  -0.0,   1e-4,   1e6,        0.1,       0.3,         1.0 / 3,
                      2.5,  400,    6324.2, 12067.3,    999999.5,  999999.9999, 0.00012345,
                      1e-5, 1e15,   1e22,   9007199254740993.0, 123456.789012345, 0.1 + 0.2,
                      NAN,  INFINITY, -INFINITY, 5e-324, 1.7976931348623157e308};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    check(v[i]);
    check(-v[i]);
    check(nextafter(v[i], 0));
    check(nextafter(v[i], INFINITY));
  }
}

/* Decimals of 1 to 17 significant digits, exponents -7 to 8: the fast path's
 * cases, its misses (16-17 digits) and both sides of its range. */
static void test_short_decimals(void **state) {
  (void)state;
  char text[64];
  for (int i = 0; i < 30000; i++) {
    int digits = 1 + (int)(next() % 17), exp10 = (int)(next() % 16) - 7;
    uint64_t m = next() % 100000000000000000ull;
    snprintf(text, sizeof text, "%s%.*e", next() % 4 ? "" : "-", digits - 1,
             (double)m / 1e17 * 10 + 1);
    char *e = strchr(text, 'e');
    snprintf(e, sizeof text - (size_t)(e - text), "e%d", exp10);
    check(strtod(text, NULL));
  }
  for (int k = 0; k < 20000; k++) /* one decimal: what sweeps of caps and powers write */
    check(k / 10.0);
}

/* Arbitrary doubles: every bit pattern class, and uniform ones near the range. */
static void test_arbitrary_doubles(void **state) {
  (void)state;
  for (int i = 0; i < 8000; i++) {
    uint64_t bits = next();
    double v;
    memcpy(&v, &bits, sizeof v);
    check(v);
    check((double)(next() >> 11) / 9007199254740992.0 * 2e6 - 1e6);
    check(ldexp((double)(next() >> 11), -(int)(next() % 80)));
  }
  assert_true(checked > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_edges),
      cmocka_unit_test(test_short_decimals),
      cmocka_unit_test(test_arbitrary_doubles),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
