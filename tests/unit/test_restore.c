/* Unit tests of the durable restore records (src/gpu/restore*.c,
 * apply_limits.c, trusted_dir.c), on the sim backend and the fake NVML
 * (tests/fake-nvml) with a real state directory. */
#include <errno.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

#define FAKE_SPEC "lib=" PFLEX_BINARY_DIR "/tests/fake-nvml/libnvidia-ml.so.1"
static char fake_path[300];

/* A fake NVML of n H200-like GPUs (700 W, range 200-700 W) plus `extra` lines. */
static struct pflex_gpu *fake(unsigned n, const char *extra) {
  snprintf(fake_path, sizeof fake_path, "%s/fake.state", dir);
  FILE *f = fopen(fake_path, "w");
  assert_non_null(f);
  for (unsigned i = 0; i < n; i++)
    fprintf(f,
            "gpu%u.name=NVIDIA H200\ngpu%u.uuid=GPU-restore-%u\ngpu%u.pci=00000000:1%u:00.0\n"
            "gpu%u.power_mw=650000\ngpu%u.limit_mw=700000\ngpu%u.default_mw=700000\n"
            "gpu%u.min_mw=200000\ngpu%u.max_mw=700000\n",
            i, i, i, i, i, i, i, i, i, i);
  if (extra) fputs(extra, f);
  fclose(f);
  setenv("FAKE_NVML_STATE", fake_path, 1); /* read by the fake only */
  struct pflex_gpu *g;
  char msg[256];
  assert_int_equal(pflex_gpu_open("nvml", FAKE_SPEC, &g, msg, sizeof msg), 0);
  return g;
}

/* A key of the fake's state file as a number (last one wins); -1 when absent. */
static long fake_num(const char *key) {
  FILE *f = fopen(fake_path, "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  size_t k = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, k) == 0 && line[k] == '=') v = strtol(line + k + 1, NULL, 10);
  fclose(f);
  return v;
}

/* Appends key=value to the fake's state (the last one wins). */
static void fake_set(const char *key, const char *value) {
  FILE *f = fopen(fake_path, "a");
  assert_non_null(f);
  fprintf(f, "%s=%s\n", key, value);
  fclose(f);
}

static long fake_limit(unsigned i) {
  char key[64];
  snprintf(key, sizeof key, "gpu%u.limit_mw", i);
  return fake_num(key);
}

static size_t nrecords(struct pflex_restore *rs) {
  struct pflex_restore_record *v;
  size_t n;
  assert_int_equal(pflex_restore_list(rs, &v, &n), 0);
  free(v);
  return n;
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

  /* A limit outside the range is refused before anything is recorded. */
  assert_int_equal(pflex_restore_set_limit(rs, g, 2, 100000), -ERANGE);
  assert_int_equal(limit(g, 2), 700000);
  assert_int_equal(pflex_restore_list(rs, &v, &n), 0);
  assert_int_equal(n, 1);
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

static void changes_at(struct pflex_limit_change *c, size_t n, unsigned mw) {
  for (size_t k = 0; k < n; k++)
    c[k] = (struct pflex_limit_change){.index = (unsigned)k, .mw = mw};
}

/* Issue 8 item 4 (2): a set that fails at GPU k of n changes none and leaves
 * no record of its own behind, so a later restore cannot undo an operator. */
static void test_apply_limits_all_or_nothing(void **state) {
  (void)state;
  struct pflex_gpu *g = fake(4, "gpu2.fail.set_limit=unknown\n");
  struct pflex_restore *rs;
  assert_int_equal(pflex_restore_open(dir, &rs), 0);
  /* GPU 0 already capped by an earlier command: its record must survive as it was. */
  assert_int_equal(pflex_restore_set_limit(rs, g, 0, 500000), 0);
  struct pflex_limit_change c[4];
  changes_at(c, 4, 400000);
  size_t failed = 99;
  assert_int_equal(pflex_restore_apply_limits(rs, g, c, 4, 0, &failed), -PFLEX_E_NVML);
  assert_int_equal(failed, 2);
  assert_int_equal(c[0].before_mw, 500000);
  assert_int_equal(c[1].before_mw, 700000);
  assert_false(c[0].left || c[1].left || c[2].left || c[3].left);
  assert_int_equal(fake_limit(0), 500000); /* back at its limit before the call */
  assert_int_equal(fake_limit(1), 700000);
  assert_int_equal(fake_limit(2), 700000);
  assert_int_equal(fake_limit(3), 700000);
  assert_int_equal(fake_num("gpu1.set_count"), 2); /* really set, then put back */
  assert_int_equal(fake_num("gpu3.set_count"), -1); /* never touched */
  struct pflex_restore_record *v;
  size_t n;
  assert_int_equal(pflex_restore_list(rs, &v, &n), 0);
  assert_int_equal(n, 1); /* only GPU 0's older record, unchanged */
  assert_string_equal(v[0].uuid, "GPU-restore-0");
  assert_int_equal(v[0].original_mw, 700000);
  assert_int_equal(v[0].set_mw, 500000);
  free(v);
  /* An operator now sets GPU 1 by hand; a full restore must leave it. */
  assert_int_equal(pflex__gpu_set_limit_unrecorded(g, 1, 350000), 0);
  struct pflex_restore_result *res;
  assert_int_equal(pflex_restore_apply(rs, g, NULL, 0, 0, &res, &n), 0);
  assert_int_equal(n, 1);
  free(res);
  assert_int_equal(fake_limit(0), 700000);
  assert_int_equal(fake_limit(1), 350000);
  /* Without the failure the same call sets all four, each recorded. */
  pflex_gpu_close(g);
  g = fake(4, NULL);
  assert_int_equal(pflex_restore_apply_limits(rs, g, c, 4, 0, &failed), 0);
  for (unsigned i = 0; i < 4; i++)
    assert_int_equal(fake_limit(i), 400000);
  assert_int_equal(nrecords(rs), 4);
  /* An index listed twice is refused before anything happens. */
  c[1].index = 0;
  assert_int_equal(pflex_restore_apply_limits(rs, g, c, 2, 0, &failed), -EINVAL);
  assert_int_equal(failed, 1);
  pflex_restore_free(rs);
  pflex_gpu_close(g);
}

static void test_apply_limits_range(void **state) {
  (void)state;
  struct pflex_gpu *g = fake(2, "gpu1.min_mw=250000\n");
  struct pflex_restore *rs;
  assert_int_equal(pflex_restore_open(dir, &rs), 0);
  struct pflex_limit_change c[2];
  changes_at(c, 2, 220000);
  size_t failed;
  assert_int_equal(pflex_restore_apply_limits(rs, g, c, 2, 0, &failed), -ERANGE);
  assert_int_equal(failed, 1);
  assert_int_equal(fake_num("gpu0.set_count"), -1); /* GPU 0 could, but nothing changes */
  assert_int_equal(nrecords(rs), 0);
  assert_int_equal(pflex_restore_apply_limits(rs, g, c, 2, PFLEX_APPLY_DRY_RUN | PFLEX_APPLY_CLAMP,
                                              &failed),
                   0);
  assert_true(c[1].clamped);
  assert_int_equal(c[1].applied_mw, 250000);
  assert_int_equal(c[1].before_mw, 700000);
  assert_int_equal(fake_limit(1), 700000); /* dry run */
  assert_int_equal(nrecords(rs), 0);
  assert_int_equal(pflex_restore_apply_limits(rs, g, c, 2, PFLEX_APPLY_CLAMP, &failed), 0);
  assert_false(c[0].clamped);
  assert_int_equal(fake_limit(0), 220000);
  assert_int_equal(fake_limit(1), 250000);
  assert_int_equal(nrecords(rs), 2);
  pflex_restore_free(rs);
  pflex_gpu_close(g);
}

/* What the GPUs were at when SIGTERM was delivered. */
static volatile sig_atomic_t delivered;
static long at_delivery[3];

static void on_term(int signo) {
  (void)signo;
  for (unsigned i = 0; i < 3; i++)
    at_delivery[i] = fake_limit(i);
  delivered = 1;
}

/* A SIGTERM raised in the middle of a 3-GPU set (by the fake, right after it
 * set GPU 0) is delivered only once the set is complete, or undone. */
static void test_apply_limits_signal(void **state) {
  (void)state;
  struct sigaction sa = {.sa_handler = on_term}, old;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, &old);
  static const char *const extra[] = {"gpu0.signal_on_set=15\n",
                                      "gpu0.signal_on_set=15\ngpu2.fail.set_limit=unknown\n"};
  static const long expect[] = {400000, 700000}; /* completed; undone */
  for (size_t t = 0; t < 2; t++) {
    struct pflex_gpu *g = fake(3, extra[t]);
    struct pflex_restore *rs;
    assert_int_equal(pflex_restore_open(dir, &rs), 0);
    struct pflex_limit_change c[3];
    changes_at(c, 3, 400000);
    delivered = 0;
    int err = pflex_restore_apply_limits(rs, g, c, 3, 0, NULL);
    assert_int_equal(err, t == 0 ? 0 : -PFLEX_E_NVML);
    assert_true(delivered); /* held, not lost: the caller's mask is back */
    for (unsigned i = 0; i < 3; i++)
      assert_int_equal(at_delivery[i], expect[t]);
    assert_int_equal(nrecords(rs), t == 0 ? 3 : 0);
    fake_set("gpu0.signal_on_set", "0");
    struct pflex_restore_result *res;
    size_t n;
    assert_int_equal(pflex_restore_apply(rs, g, NULL, 0, 0, &res, &n), 0);
    free(res);
    pflex_restore_free(rs);
    pflex_gpu_close(g);
  }
  sigaction(SIGTERM, &old, NULL);

  /* With SIGTERM's default action the process dies of it, but only after
   * the whole set, every GPU recorded. */
  struct pflex_gpu *g = fake(3, "gpu0.signal_on_set=15\n");
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    signal(SIGTERM, SIG_DFL);
    struct pflex_restore *rs;
    if (pflex_restore_open(dir, &rs) != 0) _exit(2);
    struct pflex_limit_change c[3];
    changes_at(c, 3, 400000);
    pflex_restore_apply_limits(rs, g, c, 3, 0, NULL);
    _exit(3); /* not reached: SIGTERM is delivered when the mask is restored */
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFSIGNALED(st));
  assert_int_equal(WTERMSIG(st), SIGTERM);
  for (unsigned i = 0; i < 3; i++)
    assert_int_equal(fake_limit(i), 400000);
  struct pflex_restore *rs;
  assert_int_equal(pflex_restore_open(dir, &rs), 0);
  assert_int_equal(nrecords(rs), 3);
  fake_set("gpu0.signal_on_set", "0"); /* the restore's own set must not kill this process */
  struct pflex_restore_result *res;
  size_t n;
  assert_int_equal(pflex_restore_apply(rs, g, NULL, 0, 0, &res, &n), 0);
  free(res);
  for (unsigned i = 0; i < 3; i++)
    assert_int_equal(fake_limit(i), 700000);
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
      cmocka_unit_test_setup_teardown(test_apply_limits_all_or_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_apply_limits_range, setup, teardown),
      cmocka_unit_test_setup_teardown(test_apply_limits_signal, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
