/* Unit tests of the CSV output text (src/io/csv_write.c) and of the stream
 * reader (src/io/csv_table.c). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/csv_table.h"

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

/* What the sink saw: the header and each record as "line:field|field". */
struct seen {
  char text[8][64];
  size_t n, stop_at; /* the row callback fails on row stop_at (1-based; 0 never) */
};

static void note(struct seen *s, const struct pflex__csv_record *r) {
  int len = snprintf(s->text[s->n], sizeof s->text[0], "%zu:", r->line);
  for (size_t i = 0; i < r->n; i++)
    len += snprintf(s->text[s->n] + len, sizeof s->text[0] - (size_t)len, "%s%s", i ? "|" : "",
                    r->fields[i]);
  s->n++;
}

static int on_header(void *ctx, const struct pflex__csv_record *h) {
  note(ctx, h);
  return 0;
}

static int on_row(void *ctx, const struct pflex__csv_record *r) {
  struct seen *s = ctx;
  note(s, r);
  return s->n - 1 == s->stop_at ? -ECANCELED : 0;
}

/* Records come one at a time in file order with the line they start on:
 * blank lines and records of empty fields skipped, a quoted field across
 * lines whole; a callback's error stops the read there; a short record is
 * refused with its line; the table reader gives the same records. */
static void test_stream(void **state) {
  (void)state;
  char path[] = "/tmp/pflex-test-csv-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  const char text[] = "a,b\n1,2\n\n,\n3,\"x\ny\"\n4,5\n";
  assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
  close(fd);
  struct seen s = {0};
  struct pflex__csv_sink sink = {on_header, on_row, &s};
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  assert_int_equal(pflex__csv_stream(path, &sink, &diag), 0);
  assert_int_equal(s.n, 4);
  assert_string_equal(s.text[0], "1:a|b");
  assert_string_equal(s.text[1], "2:1|2");
  assert_string_equal(s.text[2], "5:3|x\ny");
  assert_string_equal(s.text[3], "7:4|5");
  struct seen stop = {.stop_at = 2};
  sink.ctx = &stop;
  assert_int_equal(pflex__csv_stream(path, &sink, &diag), -ECANCELED);
  assert_int_equal(stop.n, 3);
  struct pflex__csv_table t;
  assert_int_equal(pflex__csv_read(path, &t, &diag), 0);
  assert_int_equal(t.nrows, 3);
  assert_int_equal(t.rows[1].line, 5);
  assert_string_equal(t.rows[1].fields[1], "x\ny");
  assert_int_equal(pflex__csv_column(&t.header, "b"), 1);
  assert_int_equal(pflex__csv_column(&t.header, "c"), -1);
  pflex__csv_release(&t);
  FILE *f = fopen(path, "w");
  fputs("a,b\n1,2\n3\n", f);
  fclose(f);
  struct seen shortrow = {0};
  sink.ctx = &shortrow;
  assert_int_equal(pflex__csv_stream(path, &sink, &diag), -PFLEX_E_PARSE);
  assert_int_equal(diag.line, 3);
  assert_string_equal(diag.message, "1 fields where the header has 2");
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_format_double),
      cmocka_unit_test(test_write),
      cmocka_unit_test(test_stream),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
