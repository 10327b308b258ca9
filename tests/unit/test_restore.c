/* Unit tests of the durable restore records (src/gpu/restore.c), on the sim
 * backend with a real state directory. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "gpu/backends.h" /* pflex__gpu_set_limit_unrecorded */
#include "pflex/error.h"
#include "pflex/gpu.h"
#include "pflex/restore.h"

static char dir[256];

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/pflex-test-restore-XXXXXX");
  assert_non_null(mkdtemp(dir));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static struct pflex_gpu *sim(unsigned n) {
  char spec[64], msg[256];
  snprintf(spec, sizeof spec, "gpus=%u,calibrate=0,noise=off", n);
  struct pflex_gpu *g;
  assert_int_equal(pflex_gpu_open("sim", spec, &g, msg, sizeof msg), 0);
  return g;
}

static unsigned limit(struct pflex_gpu *g, unsigned i) {
  unsigned mw;
  assert_int_equal(pflex_gpu_get_limit(g, i, &mw), 0);
  return mw;
}

static void test_record_then_set(void **state) {
  (void)state;
  struct pflex_gpu *g = sim(3);
  struct pflex_restore *rs;
  assert_int_equal(pflex_restore_open(dir, &rs), 0);
  char path[300];
  snprintf(path, sizeof path, "%s/restore.json", dir);
  assert_string_equal(pflex_restore_path(rs), path);
  assert_int_equal(access(path, F_OK), -1); /* nothing recorded before a change */

  assert_int_equal(pflex_restore_set_limit(rs, g, 1, 400000), 0);
  assert_int_equal(limit(g, 1), 400000);
  /* The file on disk holds GPU 1's original 700 W with its identity. */
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  assert_non_null(root);
  assert_string_equal(json_string_value(json_object_get(root, "format")), "pflex-restore");
  json_t *recs = json_object_get(root, "records");
  assert_int_equal(json_array_size(recs), 1);
  json_t *r0 = json_array_get(recs, 0);
  assert_string_equal(json_string_value(json_object_get(r0, "backend")), "sim");
  assert_string_equal(json_string_value(json_object_get(r0, "uuid")), "SIM-H200-1-01");
  assert_int_equal(json_integer_value(json_object_get(r0, "index")), 1);
  assert_int_equal(json_integer_value(json_object_get(r0, "original_limit_mw")), 700000);
  assert_int_equal(json_integer_value(json_object_get(r0, "pid")), getpid());
  json_decref(root);

  /* A second change keeps the first original. */
  assert_int_equal(pflex_restore_set_limit(rs, g, 1, 300000), 0);
  struct pflex_restore_record *v;
  size_t n;
  assert_int_equal(pflex_restore_list(rs, &v, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(v[0].original_mw, 700000);
  free(v);

  /* A limit the backend refuses leaves a harmless record (limit == original). */
  assert_int_equal(pflex_restore_set_limit(rs, g, 2, 100000), -EINVAL);
  assert_int_equal(limit(g, 2), 700000);
  assert_int_equal(pflex_restore_list(rs, &v, &n), 0);
  assert_int_equal(n, 2);
  free(v);
  pflex_restore_free(rs);
  pflex_gpu_close(g);
}

static void test_apply(void **state) {
  (void)state;
  struct pflex_gpu *g = sim(3);
  struct pflex_restore *rs;
  assert_int_equal(pflex_restore_open(dir, &rs), 0);
  assert_int_equal(pflex_restore_set_limit(rs, g, 0, 250000), 0);
  assert_int_equal(pflex_restore_set_limit(rs, g, 2, 350000), 0);
  /* Only GPU 2 first. */
  unsigned only = 2;
  struct pflex_restore_result *res;
  size_t n;
  assert_int_equal(pflex_restore_apply(rs, g, &only, 1, 0, &res, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(res[0].index, 2);
  assert_int_equal(res[0].was_mw, 350000);
  assert_int_equal(res[0].err, 0);
  free(res);
  assert_int_equal(limit(g, 2), 700000);
  assert_int_equal(limit(g, 0), 250000);
  struct pflex_restore_record *v;
  size_t nv;
  assert_int_equal(pflex_restore_list(rs, &v, &nv), 0);
  assert_int_equal(nv, 1);
  assert_string_equal(v[0].uuid, "SIM-H200-1-00");
  free(v);

  /* Another backend's records (e.g. nvml) are left alone; a record of a GPU
   * this backend does not have is kept and reported. */
  char path[300];
  snprintf(path, sizeof path, "%s/restore.json", dir);
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  json_t *recs = json_object_get(root, "records");
  json_array_append_new(recs, json_pack("{s:s,s:s,s:s,s:i,s:i,s:i,s:i}", "backend", "nvml", "uuid",
                                        "GPU-x", "pci_bus_id", "", "index", 0, "original_limit_mw",
                                        700000, "pid", 1, "time", 0));
  json_array_append_new(recs, json_pack("{s:s,s:s,s:s,s:i,s:i,s:i,s:i}", "backend", "sim", "uuid",
                                        "SIM-gone", "pci_bus_id", "", "index", 9,
                                        "original_limit_mw", 700000, "pid", 1, "time", 0));
  assert_int_equal(json_dump_file(root, path, 0), 0);
  json_decref(root);
  assert_int_equal(pflex_restore_apply(rs, g, NULL, 0, 0, &res, &n), -ENODEV);
  assert_int_equal(n, 2); /* the two sim records */
  assert_int_equal(res[0].err, 0);
  assert_int_equal(res[0].index, 0);
  assert_int_equal(res[1].err, -ENODEV);
  assert_false(res[1].found);
  free(res);
  assert_int_equal(limit(g, 0), 700000);
  assert_int_equal(pflex_restore_list(rs, &v, &nv), 0);
  assert_int_equal(nv, 2); /* nvml GPU-x and the missing sim GPU */
  assert_string_equal(v[0].uuid, "GPU-x");
  assert_string_equal(v[1].uuid, "SIM-gone");
  free(v);
  pflex_restore_free(rs);
  pflex_gpu_close(g);
}

/* A record that cannot be written means no change. */
static void test_no_change_without_record(void **state) {
  (void)state;
  struct pflex_gpu *g = sim(1);
  struct pflex_restore *rs;
  /* a state "directory" that is a file */
  char file[300];
  snprintf(file, sizeof file, "%s/file", dir);
  FILE *f = fopen(file, "w");
  fclose(f);
  assert_int_equal(pflex_restore_open(file, &rs), -ENOTDIR);
  /* a corrupt restore file is not overwritten and blocks the change */
  assert_int_equal(pflex_restore_open(dir, &rs), 0);
  char path[300];
  snprintf(path, sizeof path, "%s/restore.json", dir);
  f = fopen(path, "w");
  fputs("{\"records\": [", f);
  fclose(f);
  assert_int_equal(pflex_restore_set_limit(rs, g, 0, 300000), -PFLEX_E_PARSE);
  assert_int_equal(limit(g, 0), 700000);
  /* an unwritable directory (unless running as root, which may write anyway) */
  unlink(path);
  if (geteuid() != 0) {
    chmod(dir, 0500);
    assert_int_not_equal(pflex_restore_set_limit(rs, g, 0, 300000), 0);
    assert_int_equal(limit(g, 0), 700000);
    chmod(dir, 0700);
  }
  pflex_restore_free(rs);
  pflex_gpu_close(g);
}

static void test_memory_store(void **state) {
  (void)state;
  struct pflex_gpu *g = sim(2);
  struct pflex_restore *rs;
  assert_int_equal(pflex_restore_open_memory(&rs), 0);
  assert_string_equal(pflex_restore_path(rs), "");
  assert_int_equal(pflex_restore_set_limit(rs, g, 1, 500000), 0);
  struct pflex_restore_result *res;
  size_t n;
  assert_int_equal(pflex_restore_apply(rs, g, NULL, 0, 0, &res, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(res[0].was_mw, 500000);
  free(res);
  assert_int_equal(limit(g, 1), 700000);
  pflex_restore_free(rs);
  pflex_gpu_close(g);
}

/* A limit changed by someone else after pflex set it is left alone unless
 * forced; pflex's own two last limits (a crash between noting a limit and
 * setting it leaves the GPU at the one before) are not mistaken for that. */
static void test_operator_change(void **state) {
  (void)state;
  struct pflex_gpu *g = sim(3);
  struct pflex_restore *rs;
  assert_int_equal(pflex_restore_open(dir, &rs), 0);
  struct pflex_restore_result *res;
  size_t n;

  /* GPU 0: pflex sets 400 W, an operator then sets 350 W behind its back. */
  assert_int_equal(pflex_restore_set_limit(rs, g, 0, 400000), 0);
  assert_int_equal(pflex__gpu_set_limit_unrecorded(g, 0, 350000), 0);
  /* GPU 1: pflex sets 400 W then notes 300 W, but the GPU stays at 400 W (as
   * after a crash between the note and the change). */
  assert_int_equal(pflex_restore_set_limit(rs, g, 1, 400000), 0);
  assert_int_equal(pflex_restore_set_limit(rs, g, 1, 300000), 0);
  assert_int_equal(pflex__gpu_set_limit_unrecorded(g, 1, 400000), 0);
  /* GPU 2: pflex sets 250 W and nobody touches it. */
  assert_int_equal(pflex_restore_set_limit(rs, g, 2, 250000), 0);

  assert_int_equal(pflex_restore_apply(rs, g, NULL, 0, 0, &res, &n), -EBUSY);
  assert_int_equal(n, 3);
  assert_int_equal(res[0].err, -EBUSY);
  assert_true(res[0].changed);
  assert_int_equal(res[0].was_mw, 350000);
  assert_int_equal(res[0].record.set_mw, 400000);
  assert_int_equal(res[1].err, 0);
  assert_false(res[1].changed);
  assert_int_equal(res[2].err, 0);
  free(res);
  assert_int_equal(limit(g, 0), 350000); /* the operator's limit stays */
  assert_int_equal(limit(g, 1), 700000);
  assert_int_equal(limit(g, 2), 700000);
  /* Only GPU 0's record is kept; --force restores it. */
  struct pflex_restore_record *v;
  assert_int_equal(pflex_restore_list(rs, &v, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(v[0].uuid, "SIM-H200-1-00");
  free(v);
  assert_int_equal(pflex_restore_apply(rs, g, NULL, 0, PFLEX_RESTORE_FORCE, &res, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(res[0].was_mw, 350000);
  free(res);
  assert_int_equal(limit(g, 0), 700000);
  pflex_restore_free(rs);
  pflex_gpu_close(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_record_then_set, setup, teardown),
      cmocka_unit_test_setup_teardown(test_apply, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_change_without_record, setup, teardown),
      cmocka_unit_test_setup_teardown(test_memory_store, setup, teardown),
      cmocka_unit_test_setup_teardown(test_operator_change, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
