/* Unit tests of error codes and diagnostics (src/core/error.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pflex/error.h"

static void test_strerror(void **state) {
  (void)state;
  assert_string_equal(pflex_strerror(-PFLEX_E_NOUNCAPPED), "sweep group has no uncapped run");
  assert_string_equal(pflex_strerror(PFLEX_E_PARSE), "malformed input"); /* sign ignored */
  assert_string_equal(pflex_strerror(-ENOENT), strerror(ENOENT));
  assert_string_equal(pflex_strerror(-(PFLEX_E_BASE + 999)), "unknown pflex error");
}

static void test_diag_format(void **state) {
  (void)state;
  struct pflex_diag d;
  char buf[200];
  assert_int_equal(
      pflex_diag_set(&d, -PFLEX_E_PARSE, "runs.csv", 12, "power_w", "'%s' is not a number", "x"),
      -PFLEX_E_PARSE);
  pflex_diag_format(&d, buf, sizeof buf);
  assert_string_equal(buf, "'runs.csv': line 12, column 'power_w': 'x' is not a number");
  /* Without a line the column follows the file with ": ". */
  pflex_diag_set(&d, -PFLEX_E_DATA, "r.json", 0, "cap_w", "run 3: bad");
  pflex_diag_format(&d, buf, sizeof buf);
  assert_string_equal(buf, "'r.json': column 'cap_w': run 3: bad");
  /* A JSON reader's diag names a field; pflex_diag_set clears the mark. */
  d.is_field = 1;
  pflex_diag_format(&d, buf, sizeof buf);
  assert_string_equal(buf, "'r.json': field 'cap_w': run 3: bad");
  pflex_diag_set(&d, -PFLEX_E_DATA, "r.json", 0, "cap_w", "run 3: bad");
  assert_int_equal(d.is_field, 0);
  /* Nothing but a message; an empty message reads "error". */
  pflex_diag_set(&d, -EIO, NULL, 0, NULL, "%s", "");
  pflex_diag_format(&d, buf, sizeof buf);
  assert_string_equal(buf, "error");
  /* A NULL diag only returns the code. */
  assert_int_equal(pflex_diag_set(NULL, -EINVAL, "f", 1, "c", "m"), -EINVAL);
}

/* A buffer too small keeps a NUL-terminated prefix and writes nothing past its
 * end (the pieces after the first no longer fit at all). */
static void test_diag_format_truncates(void **state) {
  (void)state;
  struct pflex_diag d;
  pflex_diag_set(&d, -PFLEX_E_PARSE, "a-rather-long-file-name.csv", 7, "power_w", "not a number");
  char buf[16];
  memset(buf, 'Z', sizeof buf);
  pflex_diag_format(&d, buf, 10);
  assert_string_equal(buf, "'a-rather"); /* 9 characters and the NUL */
  for (size_t i = 10; i < sizeof buf; i++)
    assert_int_equal(buf[i], 'Z');
  buf[0] = 'Z';
  pflex_diag_format(&d, buf, 0); /* size 0: nothing written at all */
  assert_int_equal(buf[0], 'Z');
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_strerror),
      cmocka_unit_test(test_diag_format),
      cmocka_unit_test(test_diag_format_truncates),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
