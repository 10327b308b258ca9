/* Tests of the jobs JSON reader's refusals (src/io/jobs.c): each fault
 * blamed on its own field and job, nothing half-loaded, and a curve whose
 * throughput falls as power rises refused beyond noise and flattened within
 * it, so that no job's t_max exceeds its highest-power point's throughput. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "pflex/curve.h"
#include "pflex/jobs.h"
#include "pflex/jobs_json.h"

static char path[64];

static int setup(void **state) {
  (void)state;
  snprintf(path, sizeof path, "/tmp/test_jobs_json.%ld.json", (long)getpid());
  return 0;
}

static int teardown(void **state) {
  (void)state;
  unlink(path);
  return 0;
}

/* Reads a jobs file holding `{"jobs":[JOBS]}`. */
static int read_jobs(const char *jobs, struct pflex_jobset *set, struct pflex_diag *d) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "{\"jobs\":[%s]}\n", jobs);
  fclose(f);
  pflex_diag_clear(d);
  pflex_jobset_init(set);
  return pflex_jobs_read_json(path, set, d);
}

static void test_refused(void **state) {
  (void)state;
  const struct {
    const char *jobs, *column, *message;
  } cases[] = {
      {"{\"name\":\"a\",\"gpus\":8,\"p_max\":5000},{\"name\":\"b\",\"gpus\":8,\"p_max\":5000},"
       "{\"name\":\"a\",\"gpus\":8,\"p_max\":5000}",
       "name", "job 3 ('a'): the same name as job 1"},
      /* p_min above p_max with a PFI: the bounds are at fault, not the PFI. */
      {"{\"name\":\"a\",\"gpus\":8,\"p_max\":5000,\"p_min\":6000,\"t_max\":100,\"pfi\":1.5}",
       "p_min", "above p_max"},
      {"{\"name\":\"a\",\"gpus\":8,\"p_max\":5000,\"p_min\":6000,\"t_max\":100,"
       "\"params\":{\"c\":0.5}}",
       "p_min", "above p_max"},
      {"{\"name\":\"a\",\"gpus\":8,\"p_max\":5000,\"t_max\":100,\"pfi\":1.5,\"cap_min_w\":600,"
       "\"cap_max_w\":300}",
       "cap_min_w", "above cap_max_w"},
      {"{\"name\":\"a\",\"gpus\":8,\"p_max\":5000,\"cap_min_w\":800}", "cap_min_w",
       "above the default cap_max_w"},
      {"{\"name\":\"a\",\"gpus\":8,\"p_max\":5000,\"cap_max_w\":150}", "cap_max_w",
       "below the default cap_min_w"},
      /* 100 at 2000 W against 80 at the top: 25% more, far beyond 2 x 0.71%. */
      {"{\"name\":\"a\",\"gpus\":8,\"points\":[[5000,80],[2000,100],[3000,90]]}", "points",
       "point 2 ([2000, 100]) has 25.00% more throughput than the point at the highest power "
       "(5000 W)"},
      {"{\"name\":\"a\",\"gpus\":8,\"p_max\":5000,\"wieght\":2}", "wieght", "unknown field"},
      /* Beyond the allocator's range (pflex/alloc.h): named here, not -ERANGE later. */
      {"{\"name\":\"a\",\"gpus\":8,\"p_max\":5000,\"t_max\":1e308,\"pfi\":1.3}", "t_max",
       "1e+308 is not a number from 0 to 1e+80"},
      {"{\"name\":\"a\",\"gpus\":8,\"p_max\":5e12}", "p_max", "not a number from 0 to 1e+12"},
      {"{\"name\":\"a\",\"gpus\":8,\"p_max\":5000,\"weight\":1e13}", "weight",
       "not a number from 0 to 1e+12"},
      {"{\"name\":\"a\",\"gpus\":8,\"points\":[[2000,10],[5000,1e90]]}", "points",
       "point 2: throughput 1e+90 is above the allocator's limit 1e+80"},
      {"{\"name\":\"a\",\"gpus\":8,\"points\":[[2000,10],[2e12,20]]}", "points",
       "point 2: power 2e+12 W is above the allocator's limit 1e+12 W"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct pflex_jobset set;
    struct pflex_diag d;
    int err = read_jobs(cases[i].jobs, &set, &d);
    if (err != -PFLEX_E_DATA || strcmp(d.column, cases[i].column) != 0 ||
        !strstr(d.message, cases[i].message))
      fail_msg("case %zu: err %d, column '%s', message '%s'", i, err, d.column, d.message);
    assert_int_equal(set.n, 0); /* nothing half-loaded */
    pflex_jobset_release(&set);
  }
}

static void test_accepted(void **state) {
  (void)state;
  struct pflex_jobset set;
  struct pflex_diag d;
  /* 80.5 at 3000 W is 0.6% above the top's 80: within noise, counted at 80. */
  int err = read_jobs("{\"name\":\"a\",\"gpus\":8,\"points\":[[2000,70],[3000,80.5],[5000,80]]},"
                      "{\"name\":\"b\",\"gpus\":8,\"p_max\":5000,\"cap_min_w\":300,"
                      "\"cap_max_w\":300},"
                      "{\"name\":\"A\",\"gpus\":8,\"p_max\":5000}",
                      &set, &d);
  if (err) fail_msg("refused: %s", d.message);
  assert_int_equal(set.n, 3); /* names differ by case only: distinct */
  assert_true(pflex_curve_t_max(set.jobs[0].curve) == 80);
  assert_true(pflex_curve_eval(set.jobs[0].curve, 3000) <= 80);
  pflex_jobset_release(&set);
}

/* A runs export is named as such (pflex allocate then reads it as runs);
 * another "format" is an unknown field, as before. */
static void test_runs_file(void **state) {
  (void)state;
  const struct {
    const char *text;
    int err;
  } cases[] = {{"{\"format\":\"pflex-runs\",\"runs\":[]}", -PFLEX_E_FORMAT},
               {"{\"format\":\"pflex-jobs\",\"jobs\":[]}", -PFLEX_E_DATA}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(cases[i].text, f);
    fclose(f);
    struct pflex_jobset set;
    struct pflex_diag d;
    pflex_diag_clear(&d);
    pflex_jobset_init(&set);
    int err = pflex_jobs_read_json(path, &set, &d);
    if (err != cases[i].err || strcmp(d.column, "format") != 0)
      fail_msg("case %zu: err %d, column '%s', message '%s'", i, err, d.column, d.message);
    assert_int_equal(set.n, 0);
    pflex_jobset_release(&set);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_refused),
                                     cmocka_unit_test(test_accepted),
                                     cmocka_unit_test(test_runs_file)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
