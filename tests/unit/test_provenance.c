/* Tests of provenance (include/pflex/provenance.h, runs_provenance.h): the
 * order of kinds, and that a runs file's provenance survives every file and
 * the store unchanged, never upgraded. */
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

#include "pflex/jobs_json.h"
#include "pflex/model_json.h"
#include "pflex/provenance.h"
#include "pflex/runs_csv.h"
#include "pflex/runs_json.h"
#include "pflex/runs_provenance.h"
#include "pflex/store.h"

#define U PFLEX_PROV_UNKNOWN
#define M PFLEX_PROV_MEASURED
#define S PFLEX_PROV_SIMULATED
#define R PFLEX_PROV_RECONSTRUCTED

static void test_names(void **state) {
  (void)state;
  enum pflex_provenance p = M;
  assert_int_equal(pflex_provenance_parse(" Reconstructed\t", &p), 0);
  assert_int_equal(p, R);
  assert_int_equal(pflex_provenance_parse("simulated", &p), 0);
  assert_int_equal(p, S);
  assert_int_equal(pflex_provenance_parse("unknown", &p), 0);
  assert_int_equal(p, U);
  p = M;
  assert_int_equal(pflex_provenance_parse("modelled", &p), -EINVAL);
  assert_int_equal(pflex_provenance_parse("", &p), -EINVAL);
  assert_int_equal(pflex_provenance_parse("measuredx", &p), -EINVAL);
  assert_int_equal(p, M); /* untouched on failure */
  for (enum pflex_provenance k = U; k <= R; k++) {
    enum pflex_provenance back;
    assert_int_equal(pflex_provenance_parse(pflex_provenance_name(k), &back), 0);
    assert_int_equal(back, k);
    assert_non_null(strstr(pflex_provenance_note(k), pflex_provenance_name(k)));
  }
  assert_string_equal(pflex_provenance_name((enum pflex_provenance)99), "unknown");
}

/* A mix is its weakest member: reconstructed < simulated < unknown < measured. */
static void test_combine(void **state) {
  (void)state;
  static const enum pflex_provenance table[4][4] = {
      /*            U  M  S  R */
      [U] = {U, U, S, R},
      [M] = {U, M, S, R},
      [S] = {S, S, S, R},
      [R] = {R, R, R, R},
  };
  for (enum pflex_provenance a = U; a <= R; a++)
    for (enum pflex_provenance b = U; b <= R; b++) {
      assert_int_equal(pflex_provenance_combine(a, b), table[a][b]);
      assert_int_equal(pflex_provenance_combine(b, a), table[a][b]);
    }
}

static void add_run(struct pflex_runset *set, const char *group, double cap, const char *prov) {
  struct pflex_run r = {.group = (char *)group, .gpu = "H200", .gpus = 8, .cap_w = cap,
                        .power_w = cap * 8, .tput = 1000 + cap};
  assert_int_equal(pflex_runset_append(set, &r), 0);
  if (prov) assert_int_equal(pflex_runset_set_extra(set, set->n - 1, "provenance", prov), 0);
}

static void test_runs(void **state) {
  (void)state;
  struct pflex_runset set;
  pflex_runset_init(&set);
  assert_int_equal(pflex_runs_provenance(&set, NULL, 0), U); /* nothing: unknown */
  add_run(&set, "a", 700, "measured");
  add_run(&set, "a", 300, "measured");
  assert_int_equal(pflex_runs_provenance(&set, NULL, 0), M);
  add_run(&set, "b", 700, "");          /* empty: unknown */
  add_run(&set, "c", 700, "handmade");  /* not a name: unknown, never measured */
  add_run(&set, "d", 700, "simulated");
  add_run(&set, "e", 700, "reconstructed");
  assert_int_equal(pflex_run_provenance(&set, 2), U);
  assert_int_equal(pflex_run_provenance(&set, 3), U);
  assert_int_equal(pflex_run_provenance(&set, 99), U);
  size_t am[] = {0, 1}, mu[] = {0, 2}, ms[] = {1, 4, 2}, all_but_r[] = {0, 1, 2, 3, 4};
  assert_int_equal(pflex_runs_provenance(&set, am, 2), M);
  assert_int_equal(pflex_runs_provenance(&set, mu, 2), U);
  assert_int_equal(pflex_runs_provenance(&set, ms, 3), S);
  assert_int_equal(pflex_runs_provenance(&set, all_but_r, 5), S);
  assert_int_equal(pflex_runs_provenance(&set, NULL, 0), R);
  pflex_runset_release(&set);
  /* no column at all: unknown */
  add_run(&set, "a", 700, NULL);
  assert_int_equal(pflex_runs_provenance(&set, NULL, 0), U);
  assert_int_equal(pflex_runs_set_provenance(&set, S), 0);
  assert_int_equal(pflex_runs_provenance(&set, NULL, 0), S);
  pflex_runset_release(&set);
}

/* Reconstructed runs mixed with measured ones, through CSV, JSON and the
 * store and back: still reconstructed as a whole, each run as it was. */
static void test_round_trip(void **state) {
  (void)state;
  char dir[] = "/tmp/pflex-prov-XXXXXX", csv[64], json[64], db[64];
  assert_non_null(mkdtemp(dir));
  snprintf(csv, sizeof csv, "%s/r.csv", dir);
  snprintf(json, sizeof json, "%s/r.json", dir);
  snprintf(db, sizeof db, "%s/s.db", dir);
  struct pflex_runset a, b, c, d;
  pflex_runset_init(&a);
  add_run(&a, "m", 700, "measured");
  add_run(&a, "m", 300, "measured");
  add_run(&a, "r", 700, "reconstructed");
  add_run(&a, "r", 300, "reconstructed");
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  assert_int_equal(pflex_runs_write_csv(&a, csv), 0);
  struct pflex_runs_read_opts o = {0};
  assert_int_equal(pflex_runs_read_csv(csv, &o, &b, &diag), 0);
  assert_int_equal(pflex_runs_write_json(&b, json), 0);
  assert_int_equal(pflex_runs_read_json(json, &c, &diag), 0);
  struct pflex_store *st;
  assert_int_equal(pflex_store_open(db, PFLEX_STORE_CREATE, &st, &diag), 0);
  assert_int_equal(pflex_store_put_runs(st, &c, PFLEX_STORE_REJECT_EXISTING, NULL, &diag), 0);
  assert_int_equal(pflex_store_get_runs(st, NULL, 0, &d, &diag), 0);
  pflex_store_close(st);
  const struct pflex_runset *sets[] = {&b, &c, &d};
  for (size_t s = 0; s < 3; s++) {
    assert_int_equal(sets[s]->n, 4);
    assert_int_equal(pflex_runs_provenance(sets[s], NULL, 0), R);
    for (size_t i = 0; i < 4; i++)
      assert_int_equal(pflex_run_provenance(sets[s], i),
                       strcmp(sets[s]->runs[i].group, "m") == 0 ? M : R);
  }
  /* the measured group alone reads back as measured (nothing is downgraded either) */
  const char *only[] = {"m"};
  struct pflex_runset e;
  assert_int_equal(pflex_store_open(db, PFLEX_STORE_READONLY, &st, &diag), 0);
  assert_int_equal(pflex_store_get_runs(st, only, 1, &e, &diag), 0);
  pflex_store_close(st);
  assert_int_equal(pflex_runs_provenance(&e, NULL, 0), M);
  pflex_runset_release(&a), pflex_runset_release(&b), pflex_runset_release(&c);
  pflex_runset_release(&d), pflex_runset_release(&e);
  unlink(csv), unlink(json), unlink(db), rmdir(dir);
}

/* An old file without the column reads as unknown, not measured. */
static void test_old_file(void **state) {
  (void)state;
  char path[] = "/tmp/pflex-prov-old-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs("group,gpu,gpus,cap_w,power_w,tokens_per_s\ng,H200,8,700,5600,1000\ng,H200,8,300,2400,"
        "600\n",
        f);
  fclose(f);
  struct pflex_runset set;
  struct pflex_diag diag;
  struct pflex_runs_read_opts o = {0};
  assert_int_equal(pflex_runs_read_csv(path, &o, &set, &diag), 0);
  assert_int_equal(pflex_runs_provenance(&set, NULL, 0), U);
  pflex_runset_release(&set);
  unlink(path);
}

/* Model files: written with the field, read back; absent (an older file):
 * unknown; a value that is not a name: refused, naming the field. */
static void test_model_file(void **state) {
  (void)state;
  struct pflex_model m, back;
  pflex_model_init(&m);
  m.kind = PFLEX_MODEL_PRIOR;
  m.prior_mean = 1.5;
  m.provenance = PFLEX_PROV_SIMULATED;
  char *text = NULL;
  assert_int_equal(pflex_model_to_json(&m, &text), 0);
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  assert_int_equal(pflex_model_from_json(text, "m.json", &back, &diag), 0);
  assert_int_equal(back.provenance, PFLEX_PROV_SIMULATED);
  pflex_model_release(&back);
  char *at = strstr(text, "\"provenance\": \"simulated\"");
  assert_non_null(at);
  memcpy(at, "\"provenancx\"", 12); /* the key renamed: as if absent */
  assert_int_equal(pflex_model_from_json(text, "m.json", &back, &diag), 0);
  assert_int_equal(back.provenance, PFLEX_PROV_UNKNOWN);
  pflex_model_release(&back);
  static const char bad_value[] = "\"provenance\": \"simulatex\"";
  memcpy(at, bad_value, strlen(bad_value));
  assert_int_not_equal(pflex_model_from_json(text, "m.json", &back, &diag), 0);
  assert_non_null(strstr(diag.column, "provenance"));
  free(text);
  pflex_model_release(&m);
}

/* Jobs JSON: "provenance" read; absent: unknown; a bad value refused. */
static void test_jobs_file(void **state) {
  (void)state;
  static const char *const bodies[] = {
      "{\"provenance\": \"measured\", \"jobs\": [{\"name\": \"a\", \"gpus\": 8, \"p_max\": 5600, "
      "\"pfi\": 1.5, \"t_max\": 1000}]}",
      "{\"jobs\": [{\"name\": \"a\", \"gpus\": 8, \"p_max\": 5600, \"pfi\": 1.5, \"t_max\": 1000}]}",
      "{\"provenance\": 3, \"jobs\": [{\"name\": \"a\", \"gpus\": 8, \"p_max\": 5600, \"pfi\": 1.5, \"t_max\": 1000}]}"};
  const int want[] = {PFLEX_PROV_MEASURED, PFLEX_PROV_UNKNOWN, -1};
  for (size_t k = 0; k < 3; k++) {
    char path[] = "/tmp/pflex-prov-jobs-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bodies[k], strlen(bodies[k])), (ssize_t)strlen(bodies[k]));
    close(fd);
    struct pflex_jobset set;
    struct pflex_diag diag;
    pflex_diag_clear(&diag);
    int err = pflex_jobs_read_json(path, &set, &diag);
    if (want[k] < 0) {
      assert_int_not_equal(err, 0);
      assert_non_null(strstr(diag.column, "provenance"));
    } else {
      assert_int_equal(err, 0);
      assert_int_equal(set.provenance, want[k]);
      pflex_jobset_release(&set);
    }
    unlink(path);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names), cmocka_unit_test(test_combine), cmocka_unit_test(test_runs),
      cmocka_unit_test(test_round_trip), cmocka_unit_test(test_old_file),
      cmocka_unit_test(test_model_file), cmocka_unit_test(test_jobs_file)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
