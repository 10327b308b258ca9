/* Tests of lease bookkeeping (src/agent/lease.c), the job table
 * (src/agent/jobs.c) and the lease file (src/agent/state.c). */
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

#include "agent/jobs.h"
#include "agent/lease.h"
#include "agent/state.h"

static void test_grant_due_left(void **state) {
  (void)state;
  struct agent_lease l = {0};
  assert_false(agent_lease_due(&l, 1e9));
  assert_true(agent_lease_left(&l, 0) < 0);
  agent_lease_grant(&l, 450000, 100.0, 30.0, true, 0);
  assert_int_equal(l.state, AGENT_LEASE_HELD);
  assert_int_equal(agent_lease_target_mw(&l), 450000);
  assert_false(agent_lease_due(&l, 129.999));
  assert_true(agent_lease_due(&l, 130.0));
  assert_true(fabs(agent_lease_left(&l, 110.0) - 20.0) < 1e-9);
  assert_true(agent_lease_left(&l, 200.0) == 0);
}

static void test_fall_back(void **state) {
  (void)state;
  struct agent_lease d, w, none = {0};
  agent_lease_grant(&d, 400000, 0, 10, true, 0);
  agent_lease_grant(&w, 400000, 0, 10, false, 500000);
  agent_lease_fall_back(&d);
  agent_lease_fall_back(&w);
  agent_lease_fall_back(&none);
  assert_int_equal(d.state, AGENT_LEASE_RESTORE);
  assert_int_equal(agent_lease_target_mw(&d), 0);
  assert_int_equal(w.state, AGENT_LEASE_FALLBACK);
  assert_int_equal(agent_lease_target_mw(&w), 500000);
  assert_false(agent_lease_due(&w, 1e9)); /* a fallback has no deadline */
  assert_int_equal(none.state, AGENT_LEASE_NONE);
}

static void test_renew_all_and_deadline(void **state) {
  (void)state;
  struct agent_lease v[4] = {0};
  agent_lease_grant(&v[0], 1000, 0, 5, true, 0);
  agent_lease_grant(&v[1], 1000, 0, 50, true, 0);
  v[2].state = AGENT_LEASE_FALLBACK;
  v[2].fallback_mw = 3000;
  assert_true(agent_lease_next_deadline(v, 4) == 5);
  agent_lease_renew_all(v, 4, 100, 30);
  assert_true(v[0].expires_s == 130 && v[1].expires_s == 130);
  assert_int_equal(v[2].state, AGENT_LEASE_FALLBACK); /* not a lease: untouched */
  assert_int_equal(v[3].state, AGENT_LEASE_NONE);
  assert_true(agent_lease_next_deadline(v, 4) == 130);
  assert_true(isinf(agent_lease_next_deadline(v + 2, 2)));
}

static void test_state_names(void **state) {
  (void)state;
  for (int s = AGENT_LEASE_NONE; s <= AGENT_LEASE_RESTORE; s++) {
    enum agent_lease_state back;
    assert_int_equal(agent_lease_state_parse(agent_lease_state_name(s), &back), 0);
    assert_int_equal(back, s);
  }
  enum agent_lease_state x;
  assert_int_equal(agent_lease_state_parse("leased", &x), -EINVAL);
}

static void test_jobs_table(void **state) {
  (void)state;
  struct agent_jobs j;
  unsigned clash = 99;
  uint64_t gpus = 0;
  agent_jobs_init(&j, 4, NULL);
  assert_int_equal(agent_jobs_put(&j, "a", 0x3, &clash), 0);
  assert_int_equal(agent_jobs_put(&j, "b", 0x6, &clash), -EBUSY);
  assert_int_equal(clash, 1);
  assert_int_equal(agent_jobs_put(&j, "b", 0xc, &clash), 0);
  assert_int_equal(agent_jobs_put(&j, "a", 0x1, &clash), 0); /* replaces a's GPUs */
  assert_string_equal(agent_jobs_of_gpu(&j, 0)->id, "a");
  assert_null(agent_jobs_of_gpu(&j, 1));
  /* the directory names GPU 1 and GPU 2 for job d; the API's b keeps GPU 2 */
  char dir[4][AGENT_JOB_ID_MAX + 1] = {"", "d", "d", ""};
  assert_int_equal(agent_jobs_set_dir(&j, dir, 4), 0);
  assert_string_equal(agent_jobs_of_gpu(&j, 1)->id, "d");
  assert_string_equal(agent_jobs_of_gpu(&j, 2)->id, "b");
  assert_int_equal(agent_job_gpus(&j, agent_jobs_find(&j, "d")), 0x2);
  assert_int_equal(agent_jobs_delete(&j, "b", &gpus), 0);
  assert_int_equal(gpus, 0xc);
  assert_string_equal(agent_jobs_of_gpu(&j, 2)->id, "d"); /* the directory's again */
  assert_int_equal(agent_jobs_delete(&j, "b", &gpus), -ENOENT);
  char none[4][AGENT_JOB_ID_MAX + 1] = {"", "", "", ""};
  assert_int_equal(agent_jobs_set_dir(&j, none, 4), 0);
  assert_null(agent_jobs_find(&j, "d"));
  /* throughput ring keeps the newest */
  struct agent_job *a = agent_jobs_find(&j, "a");
  for (int k = 0; k < 6; k++)
    agent_job_tput_push(a, k, 100.0 * k);
  assert_true(agent_job_tput_last(a)->value == 500);
  assert_int_equal(a->tput_n, 4);
  assert_int_equal(a->tput_total, 6);
  agent_jobs_release(&j);
}

static void test_state_file(void **state) {
  (void)state;
  char dir[] = "/tmp/test_agent_lease.XXXXXX", path[64], why[256];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/leases.json", dir);
  struct agent_state_entry v[3] = {{"GPU-a", 0, {0}}, {"GPU-b", 1, {0}}, {"GPU-c", 2, {0}}};
  agent_lease_grant(&v[0].lease, 450000, 1000.0, 30, false, 500000);
  v[1].lease.state = AGENT_LEASE_NONE;
  v[2].lease.state = AGENT_LEASE_RESTORE;
  struct agent_state_entry *back = NULL;
  size_t n = 0;
  assert_int_equal(agent_state_load(path, "nvml", &back, &n, why, sizeof why), -ENOENT);
  assert_int_equal(agent_state_save(path, "nvml", v, 3, 1010.0, 5000.0), 0);
  assert_int_equal(agent_state_load(path, "nvml", &back, &n, why, sizeof why), 0);
  assert_int_equal(n, 2); /* NONE is not written */
  assert_string_equal(back[0].uuid, "GPU-a");
  assert_int_equal(back[0].lease.state, AGENT_LEASE_HELD);
  assert_int_equal(back[0].lease.cap_mw, 450000);
  assert_true(fabs(back[0].lease.expires_s - 5020.0) < 1e-6); /* 20 s left, in wall time */
  assert_false(back[0].lease.fallback_default);
  assert_int_equal(back[0].lease.fallback_mw, 500000);
  assert_int_equal(back[1].lease.state, AGENT_LEASE_RESTORE);
  assert_int_equal(back[1].index, 2);
  free(back);
  assert_int_equal(agent_state_load(path, "sim", &back, &n, why, sizeof why), -EXDEV);
  FILE *f = fopen(path, "w");
  fputs("{\"format\":\"pflexd-leases\",\"backend\":\"nvml\",\"gpus\":[{\"uuid\":\"x\",\"index\":0,"
        "\"state\":\"held\",\"cap_mw\":-1}]}",
        f);
  fclose(f);
  assert_int_equal(agent_state_load(path, "nvml", &back, &n, why, sizeof why), -EINVAL);
  assert_non_null(strstr(why, "gpus[0]"));
  unlink(path);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grant_due_left),     cmocka_unit_test(test_fall_back),
      cmocka_unit_test(test_renew_all_and_deadline), cmocka_unit_test(test_state_names),
      cmocka_unit_test(test_jobs_table),          cmocka_unit_test(test_state_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
