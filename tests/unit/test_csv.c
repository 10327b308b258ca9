/* Unit tests of the CSV output text (src/io/csv_write.c). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "pflex/csv.h"
#include "pflex/format.h"

static void test_format_double(void **state) {
  (void)state;
  char b[PFLEX_FORMAT_NUM_MAX];
  /* 3179.6 is not exact in binary: %.17g gives 3179.5999999999999, yet the
   * 5-digit text reads back as the same double. */
  pflex_format_double(b, sizeof b, 3179.6);
  assert_string_equal(b, "3179.6");
  pflex_format_double(b, sizeof b, 0.1 + 0.2); /* 0.30000000000000004: 0.3 is another double */
  assert_string_equal(b, "0.30000000000000004");
  pflex_format_double(b, sizeof b, 700);
  assert_string_equal(b, "700");
  pflex_format_double(b, sizeof b, -2.5e-7);
  assert_string_equal(b, "-2.5e-07");
  pflex_format_double(b, sizeof b, 1.0 / 3.0); /* 16 digits: 15 give a neighbouring double */
  assert_true(strtod(b, NULL) == 1.0 / 3.0);
  assert_string_equal(b, "0.3333333333333333");
  pflex_format_double(b, sizeof b, NAN);
  assert_string_equal(b, "nan");
}

static char *written(void (*fn)(FILE *)) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  assert_non_null(f);
  fn(f);
  fclose(f);
  return text;
}

static void fields(FILE *f) {
  assert_int_equal(pflex_csv_write_field(f, "plain", ','), 0);
  assert_int_equal(pflex_csv_write_field(f, "a,b", ','), 0);
  assert_int_equal(pflex_csv_write_field(f, "say \"hi\"", ','), 0);
  assert_int_equal(pflex_csv_write_field(f, " pad", ','), 0);
  assert_int_equal(pflex_csv_write_field(f, "", ','), 0);
  assert_int_equal(pflex_csv_write_double(f, 3179.6, '\n'), 0);
}

static void test_write(void **state) {
  (void)state;
  char *t = written(fields);
  /* RFC 4180: quotes only where needed, inner quotes doubled; a leading blank
   * is quoted because readers (libcsv) trim unquoted blanks. */
  assert_string_equal(t, "plain,\"a,b\",\"say \"\"hi\"\"\",\" pad\",,3179.6\n");
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_format_double),
      cmocka_unit_test(test_write),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
