/* pflex_jobs_read_json (pflex allocate's jobs file) on arbitrary bytes, then
 * what pflex allocate does with an accepted job set: every strategy on a 20%
 * cut. The allocator's contract (alloc.h) is checked on each success: the
 * powers sum to no more than the target and each job's power lies within
 * its floor and its P_max. */
#include "fuzz.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "pflex/alloc.h"
#include "pflex/jobs.h"
#include "pflex/jobs_json.h"

/* fuzz-args: -max_len=4096 */

static void allocate(const struct pflex_jobset *set) {
  double target;
  if (pflex_alloc_target_for_cut(set->jobs, set->n, 0.2, &target) != 0) return;
  struct pflex_alloc_result *res = calloc(set->n, sizeof *res);
  fuzz_check(res != NULL);
  for (int st = 0; st < PFLEX_ALLOC_NSTRATEGIES; st++) {
    struct pflex_alloc_summary sum;
    int err = pflex_alloc_run(set->jobs, set->n, st, target, NULL, res, &sum);
    fuzz_check(err <= 0);
    if (err) continue;
    double total = 0;
    for (size_t i = 0; i < set->n; i++) {
      total += res[i].power_w;
      fuzz_check(res[i].power_w >= res[i].floor_w);
    }
    if (!(total <= target))
      fprintf(stderr, "%s: total %.17g above the target %.17g\n", pflex_alloc_strategy_name(st),
              total, target);
    fuzz_check(total <= target);
  }
  free(res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_path(data, size);
  if (!path) return 0;
  struct pflex_jobset set;
  struct pflex_diag diag = {0};
  pflex_jobset_init(&set);
  int err = pflex_jobs_read_json(path, &set, &diag);
  fuzz_check(err <= 0);
  if (err == 0) {
    for (size_t i = 0; i < set.n; i++) {
      fuzz_check(set.jobs[i].gpus >= 1 && set.jobs[i].name != NULL);
      const struct pflex_alloc_job *j = &set.jobs[i];
      fuzz_check(!(j->p_min > 0 && j->p_max > 0) || j->p_min <= j->p_max);
      for (size_t k = 0; k < i && set.n <= 64; k++) /* names are distinct */
        fuzz_check(strcmp(set.jobs[k].name, j->name) != 0);
    }
    if (set.n > 0 && set.n <= 64) allocate(&set);
  }
  pflex_jobset_release(&set);
  return 0;
}
