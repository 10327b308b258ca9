/* What the controller reads from every agent each round: GET /v1/gpus
 * (ctl_parse_gpus), GET /v1/jobs (ctl_parse_jobs) and GET /v1/node
 * (ctl_parse_node: both in one reply), on arbitrary bytes (one input goes to
 * all three; the node's is accepted exactly when both others are, with the
 * same counts). Checked on every input: accepted GPUs have
 * distinct indexes, watts in range (or unknown), least limit not above the
 * most, and job labels pflexd would accept; accepted jobs have valid ids,
 * weights and floors; a refusal says why and returns nothing. */
#include "fuzz.h"

#include <errno.h>
#include <math.h>

#include "agent/body.h"
#include "controller/agent_json.h"

/* fuzz-link: pflex_controller */
/* fuzz-args: -max_len=16384 */

static bool watts_ok(double w) {
  return isnan(w) || (w >= 0 && w <= 100000);
}

static void check_gpus(const struct ctl_gpu_state *g, size_t n) {
  fuzz_check(n <= CTL_MAX_NODE_GPUS);
  for (size_t i = 0; i < n; i++) {
    fuzz_check(watts_ok(g[i].power_w) && watts_ok(g[i].limit_w) && watts_ok(g[i].min_w));
    fuzz_check(watts_ok(g[i].max_w) && watts_ok(g[i].default_w) && watts_ok(g[i].enforced_w));
    fuzz_check(!(g[i].min_w > g[i].max_w));
    fuzz_check(g[i].lease_s_left == -1 || g[i].lease_s_left >= 0);
    fuzz_check(!g[i].job[0] || agent_job_id_valid(g[i].job));
    for (size_t k = 0; k < i; k++)
      fuzz_check(g[k].index != g[i].index);
  }
}

static void check_jobs(const struct ctl_job_tput *j, size_t n) {
  for (size_t i = 0; i < n; i++) {
    fuzz_check(agent_job_id_valid(j[i].id));
    fuzz_check(!j[i].meta.class_name[0] || agent_class_name_valid(j[i].meta.class_name));
    fuzz_check(j[i].meta.weight == 0 || (j[i].meta.weight > 0 && j[i].meta.weight <= 1000));
    fuzz_check(j[i].meta.min_tput == -1 || (j[i].meta.min_tput >= 0 && j[i].meta.min_tput <= 1));
    fuzz_check(j[i].has_tput == isfinite(j[i].tput));
    fuzz_check(j[i].telemetry.n <= CTL_TELEMETRY_MAX);
    for (size_t k = 0; k < j[i].telemetry.n; k++) {
      const char *name = j[i].telemetry.name[k];
      fuzz_check(name[0] && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == strlen(name));
      fuzz_check(isfinite(j[i].telemetry.value[k]));
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct ctl_gpu_state gpus[CTL_MAX_NODE_GPUS];
  static struct ctl_job_tput jobs[CTL_MAX_NODE_GPUS];
  size_t n = 12345;
  char err[256] = "";
  int rc = ctl_parse_gpus((const char *)data, size, gpus, CTL_MAX_NODE_GPUS, &n, err, sizeof err);
  if (rc == 0)
    check_gpus(gpus, n);
  else
    fuzz_check(rc == -EINVAL && err[0] && n == 12345);
  size_t ng = n;
  int rc_g = rc;
  n = 12345;
  err[0] = '\0';
  rc = ctl_parse_jobs((const char *)data, size, jobs, CTL_MAX_NODE_GPUS, &n, err, sizeof err);
  if (rc == 0)
    check_jobs(jobs, n);
  else
    fuzz_check(rc == -EINVAL && err[0] && n == 12345);
  size_t nn_g = 12345, nn_j = 12345;
  err[0] = '\0';
  int rc_n = ctl_parse_node((const char *)data, size, gpus, CTL_MAX_NODE_GPUS, &nn_g, jobs,
                            CTL_MAX_NODE_GPUS, &nn_j, err, sizeof err);
  if (rc_g == 0 && rc == 0)
    fuzz_check(rc_n == 0 && nn_g == ng && nn_j == n);
  else
    fuzz_check(rc_n == -EINVAL && err[0] && nn_g == 12345 && nn_j == 12345);
  return 0;
}
