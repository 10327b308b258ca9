/* The declarative option tables (src/cli/options.c): values of every kind,
 * the usage errors' exact wording, the checks after parsing, and the help. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/options.h"

struct inner {
  double x;
  const char *name;
};

struct args {
  bool json, csv, append;
  const char *out;
  double cut, noise;
  size_t jobs;
  unsigned char small;
  unsigned long long seed;
  struct cli_list caps;
  struct cli_strings groups;
  int color;
  enum { SHAPE_DATA, SHAPE_FAMILY } shape;
  int odd;
  struct inner in;
};

static const struct cli_choice colors[] = {{"red", 10}, {"green", 20}, {NULL, 0}};

static const char *shape_name(int i) {
  static const char *const names[] = {"data", "family"};
  return i >= 0 && i < 2 ? names[i] : NULL;
}

static int parse_odd(const char *arg, void *field) {
  double v;
  if (cli_decimal(arg, &v) || fmod(v, 2) != 1) return -EINVAL;
  *(int *)field = (int)v;
  return 0;
}

static const struct cli_option inner_rows[] = {
    {CLI_DOUBLE("x", "X", struct inner, x, -1, 1, "inner number")},
    {CLI_STRING("name", "NAME", struct inner, name, "inner name")},
    {CLI_END}};

#define A struct args
static const struct cli_option rows[] = {
    {CLI_FLAG("json", A, json, "print JSON")},
    {CLI_FLAG("csv", A, csv, "print CSV")},
    {CLI_STRING("out", "FILE", A, out, "write to FILE"), .short_name = 'o'},
    {CLI_FLAG("append", A, append, "add to FILE"), .needs = "out"},
    {CLI_DOUBLE("cut", "PCT", A, cut, 0, 100, "cut PCT percent")},
    {CLI_DOUBLE("noise", "X", A, noise, 0, 1, "relative noise"), .flags = CLI_OPEN_MAX},
    {CLI_COUNT("jobs", "N", A, jobs, 1, 1000, "jobs per workload")},
    {CLI_COUNT("small", "N", A, small, 0, 100000, "a byte")},
    {CLI_COUNT("seed", "S", A, seed, 0, ~0ULL, "seed")},
    {CLI_LIST("caps", "LIST", A, caps, 0, INFINITY, "caps in W"), .flags = CLI_OPEN_MIN},
    {CLI_STRINGS("group", "NAME", A, groups, "a group; repeat for several")},
    {CLI_ENUM("color", "C", A, color, colors, "red or green")},
    {CLI_ENUM_FN("shape", "KIND", A, shape, shape_name, "data or family")},
    {CLI_CUSTOM("odd", "N", A, odd, parse_odd, "an odd number", "an odd number")},
    {CLI_INCLUDE(A, in, inner_rows)},
    {CLI_FLAG("hidden", A, csv, NULL)},
    {CLI_END}};
#undef A

static const struct cli_spec spec = {.name = "demo",
                                     .usage = "pflex demo FILE [options]",
                                     .about = "A command to test the option tables.",
                                     .options = rows,
                                     .operands = "FILE",
                                     .min_operands = 1,
                                     .max_operands = 1,
                                     .exclusive = (const char *const[]){"json csv", NULL},
                                     .notes = "Exit status 2 on a usage error."};

/* Runs cli_parse on the words (NULL-terminated) with stderr captured into err. */
static int parse(struct args *a, struct cli_parsed *p, char *err, size_t size, ...) {
  static char *argv[32]; /* the operands cli_parse returns point into it */
  int argc = 0;
  argv[argc++] = "demo";
  va_list ap;
  va_start(ap, size);
  for (char *w; (w = va_arg(ap, char *));)
    argv[argc++] = w;
  va_end(ap);
  argv[argc] = NULL;
  fflush(stderr);
  FILE *tmp = tmpfile();
  assert_non_null(tmp);
  int saved = dup(STDERR_FILENO);
  dup2(fileno(tmp), STDERR_FILENO);
  int r = cli_parse(&spec, argc, argv, a, p);
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  rewind(tmp);
  size_t n = fread(err, 1, size - 1, tmp);
  err[n] = '\0';
  fclose(tmp);
  return r;
}

#define TRY "\ntry 'pflex help demo'\n"

/* A usage error with exactly message msg for the given words. */
static void refused(const char *msg, ...) {
  char *w[8];
  size_t n = 0;
  va_list ap;
  va_start(ap, msg);
  for (char *x; (x = va_arg(ap, char *));)
    w[n++] = x;
  va_end(ap);
  w[n] = NULL;
  struct args a = {0};
  struct cli_parsed p;
  char err[1024], want[1024];
  int r = parse(&a, &p, err, sizeof err, "file", n > 0 ? w[0] : NULL, n > 1 ? w[1] : NULL,
                n > 2 ? w[2] : NULL, n > 3 ? w[3] : NULL, NULL);
  snprintf(want, sizeof want, "error: %s" TRY, msg);
  assert_int_equal(r, -EINVAL);
  assert_string_equal(err, want);
  cli_release(&spec, &a);
}

static void test_values(void **state) {
  (void)state;
  struct args a = {.cut = -1, .noise = 0.5};
  struct cli_parsed p;
  char err[1024];
  int r = parse(&a, &p, err, sizeof err, "--json", "in.csv", "--cut", "12.5", "-o", "o.csv",
                "--jobs", "7", "--seed", "18446744073709551615", "--caps", "200,300:500:100",
                "--group", "a", "--group", "b", "--color", "green", "--shape", "family", "--odd",
                "3", "--x", "-0.5", "--name", "n", "--append", NULL);
  assert_int_equal(r, 0);
  assert_string_equal(err, "");
  assert_true(a.json);
  assert_false(a.csv);
  assert_true(a.append);
  assert_string_equal(a.out, "o.csv");
  assert_true(a.cut == 12.5);
  assert_true(a.noise == 0.5); /* not given: untouched */
  assert_int_equal(a.jobs, 7);
  assert_true(a.seed == ~0ULL);
  assert_int_equal(a.caps.n, 4);
  assert_true(a.caps.v[0] == 200 && a.caps.v[1] == 300 && a.caps.v[3] == 500);
  assert_int_equal(a.groups.n, 2);
  assert_string_equal(a.groups.v[1], "b");
  assert_int_equal(a.color, 20);
  assert_int_equal(a.shape, SHAPE_FAMILY);
  assert_int_equal(a.odd, 3);
  assert_true(a.in.x == -0.5);
  assert_string_equal(a.in.name, "n");
  assert_int_equal(p.noperands, 1);
  assert_string_equal(p.operands[0], "in.csv");
  assert_true(cli_given(&p, "cut"));
  assert_true(cli_given(&p, "x"));
  assert_false(cli_given(&p, "noise"));
  assert_false(cli_given(&p, "nosuch"));
  cli_release(&spec, &a);
  assert_null(a.caps.v);
  assert_null(a.groups.v);
}

/* Given twice, the last value counts (a list's first array is freed: valgrind). */
static void test_repeated(void **state) {
  (void)state;
  struct args a = {0};
  struct cli_parsed p;
  char err[256];
  assert_int_equal(parse(&a, &p, err, sizeof err, "f", "--caps", "1,2,3", "--caps", "9", "--cut",
                         "1", "--cut", "2", NULL),
                   0);
  assert_int_equal(a.caps.n, 1);
  assert_true(a.caps.v[0] == 9);
  assert_true(a.cut == 2);
  cli_release(&spec, &a);
}

static void test_numbers_refused(void **state) {
  (void)state;
  refused("--cut: '0x1e' is not a number from 0 to 100", "--cut", "0x1e", NULL);
  refused("--cut: 'inf' is not a number from 0 to 100", "--cut", "inf", NULL);
  refused("--cut: 'nan' is not a number from 0 to 100", "--cut", "nan", NULL);
  refused("--cut: ' 5' is not a number from 0 to 100", "--cut", " 5", NULL);
  refused("--cut: '101' is not a number from 0 to 100", "--cut", "101", NULL);
  refused("--cut: '' is not a number from 0 to 100", "--cut", "", NULL);
  refused("--noise: '1' is not a number in [0, 1)", "--noise", "1", NULL);
  refused("--x: '2' is not a number from -1 to 1", "--x", "2", NULL);
  refused("--jobs: '0' is not a whole number from 1 to 1000", "--jobs", "0", NULL);
  refused("--jobs: '-1' is not a whole number from 1 to 1000", "--jobs", "-1", NULL);
  refused("--jobs: '+5' is not a whole number from 1 to 1000", "--jobs", "+5", NULL);
  refused("--jobs: '0x10' is not a whole number from 1 to 1000", "--jobs", "0x10", NULL);
  refused("--jobs: '2.0' is not a whole number from 1 to 1000", "--jobs", "2.0", NULL);
  /* The field's type bounds the range: an unsigned char holds at most 255. */
  refused("--small: '256' is not a whole number from 0 to 255", "--small", "256", NULL);
  refused("--seed: '18446744073709551616' is not a whole number", "--seed", "18446744073709551616",
          NULL);
  refused("--caps: '0,100' is not a list of numbers > 0 (e.g. 1,2,5 or 0:40:5)", "--caps", "0,100",
          NULL);
  refused("--caps: '5:1' is not a list of numbers > 0 (e.g. 1,2,5 or 0:40:5)", "--caps", "5:1",
          NULL);
  refused("--caps: '0x10' is not a list of numbers > 0 (e.g. 1,2,5 or 0:40:5)", "--caps", "0x10",
          NULL);
  refused("--color: 'blue' is not one of red, green", "--color", "blue", NULL);
  refused("--shape: 'round' is not one of data, family", "--shape", "round", NULL);
  refused("--odd: '4' is not an odd number", "--odd", "4", NULL);
}

static void test_options_refused(void **state) {
  (void)state;
  refused("unknown option '--foo'", "--foo", NULL);
  refused("unknown option '--foo'", "--foo=3", NULL);
  refused("unknown option '-z'", "-z", NULL);
  refused("--cut needs a value (PCT)", "--cut", NULL);
  refused("--out needs a value (FILE)", "-o", NULL);
  refused("--json takes no value", "--json=yes", NULL);
  refused("ambiguous option '--c'", "--c", "1", NULL);
  refused("--json and --csv exclude each other", "--csv", "--json", NULL);
  refused("--append needs --out", "--append", NULL);
  refused("unexpected argument 'extra' (expected one FILE)", "extra", NULL);
}

static void test_operands(void **state) {
  (void)state;
  struct args a = {0};
  struct cli_parsed p;
  char err[256];
  assert_int_equal(parse(&a, &p, err, sizeof err, "--json", NULL), -EINVAL);
  assert_string_equal(err, "error: missing FILE" TRY);
  /* A unique prefix is the option (getopt_long's rule); "--" ends the options. */
  assert_int_equal(parse(&a, &p, err, sizeof err, "--jso", "--", "--cut", NULL), 0);
  assert_true(a.json);
  assert_string_equal(p.operands[0], "--cut");
}

static const struct cli_option req_rows[] = {
    {CLI_STRING("out", "DIR", struct args, out, "output folder"), .flags = CLI_REQUIRED},
    {CLI_END}};

static void test_required(void **state) {
  (void)state;
  static const struct cli_spec s = {.name = "twin reference",
                                    .help_cmd = "twin",
                                    .usage = "pflex twin reference --out DIR",
                                    .options = req_rows};
  struct args a = {0};
  struct cli_parsed p;
  char *argv[] = {"reference", NULL};
  fflush(stderr);
  FILE *tmp = tmpfile();
  int saved = dup(STDERR_FILENO);
  dup2(fileno(tmp), STDERR_FILENO);
  int r = cli_parse(&s, 1, argv, &a, &p);
  cli_usage_error(&s, "a message of %s", "its own");
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  rewind(tmp);
  char err[512];
  err[fread(err, 1, sizeof err - 1, tmp)] = '\0';
  fclose(tmp);
  assert_int_equal(r, -EINVAL);
  assert_string_equal(err, "error: --out DIR is required\ntry 'pflex help twin'\n"
                           "error: a message of its own\ntry 'pflex help twin'\n");
  assert_int_equal(cli_parse_status(-EINVAL), 2);
  assert_int_equal(cli_parse_status(-ENOMEM), 1);
}

static void test_decimal(void **state) {
  (void)state;
  double v;
  unsigned long long u;
  assert_int_equal(cli_decimal("1e3", &v), 0);
  assert_true(v == 1000);
  assert_int_equal(cli_decimal("-.5", &v), 0);
  assert_true(v == -0.5);
  assert_int_equal(cli_decimal("1e999", &v), -EINVAL);
  assert_int_equal(cli_decimal("1,5", &v), -EINVAL);
  assert_int_equal(cli_decimal("5 ", &v), -EINVAL);
  assert_int_equal(cli_decimal("--5", &v), -EINVAL);
  assert_int_equal(cli_decimal_count("007", &u), 0);
  assert_true(u == 7);
  assert_int_equal(cli_decimal_count("", &u), -EINVAL);
  double *l;
  size_t n;
  assert_int_equal(cli_decimal_list("0:0.3:0.1", &l, &n), 0);
  assert_int_equal(n, 4); /* 0.1 steps do not drift past the end */
  assert_true(fabs(l[3] - 0.3) < 1e-12);
  free(l);
  assert_int_equal(cli_decimal_list("", &l, &n), -EINVAL);
  assert_int_equal(cli_decimal_list("1,,2", &l, &n), -EINVAL);
  assert_int_equal(cli_decimal_list("0:1:0", &l, &n), -EINVAL);
}

static void test_help(void **state) {
  (void)state;
  char *text = NULL;
  size_t size = 0;
  FILE *out = open_memstream(&text, &size);
  cli_help(out, &spec, 0);
  fclose(out);
  assert_non_null(strstr(text, "usage: pflex demo FILE [options]\nA command to test"));
  /* Every visible row, with its argument name; hidden rows and included rows. */
  assert_non_null(strstr(text, "  -o, --out FILE"));
  assert_non_null(strstr(text, "  --cut PCT "));
  assert_non_null(strstr(text, "  --x X "));
  assert_non_null(strstr(text, "  --json "));
  assert_null(strstr(text, "--hidden"));
  assert_non_null(strstr(text, "\nExit status 2 on a usage error.\n"));
  /* No line over 80 columns, no trailing blanks. */
  for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
    assert_true(nl - line <= 80);
    assert_true(nl == line || nl[-1] != ' ');
  }
  free(text);
  /* A long help text wraps under its column. */
  static const struct cli_option long_rows[] = {
      {CLI_FLAG("json", struct args, json,
                "one two three four five six seven eight nine ten eleven twelve thirteen "
                "fourteen fifteen sixteen seventeen eighteen")},
      {CLI_END}};
  static const struct cli_spec ls = {.name = "l", .usage = "pflex l", .options = long_rows};
  out = open_memstream(&text, &size);
  cli_help(out, &ls, 2);
  fclose(out);
  assert_string_equal(text, "  usage: pflex l\n\n  options:\n"
                            "    --json  one two three four five six seven eight nine ten eleven "
                            "twelve\n"
                            "            thirteen fourteen fifteen sixteen seventeen eighteen\n");
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values),          cmocka_unit_test(test_repeated),
      cmocka_unit_test(test_numbers_refused), cmocka_unit_test(test_options_refused),
      cmocka_unit_test(test_operands),        cmocka_unit_test(test_required),
      cmocka_unit_test(test_decimal),         cmocka_unit_test(test_help),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
