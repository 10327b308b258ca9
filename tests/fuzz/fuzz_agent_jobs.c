/* agent_job_parse (pflexd's PUT /v1/jobs/{id} body), the job id check and
 * the StatsD "JOB.NAME" split on arbitrary bytes. Contract: an accepted body
 * lists 1-64 distinct GPUs below the node's count (and an http URL, if any); a refused one names a
 * 4xx status and a message; a split's job part is a valid id or empty. */
#include "fuzz.h"

#include <errno.h>
#include <string.h>

#include "agent/body.h"
#include "agent/jobtput.h"

/* fuzz-link: pflex_agent */
/* fuzz-args: -max_len=4096 */

#define NGPUS 8

static void check_split(const uint8_t *data, size_t size) {
  char *s = fuzz_cstr(data, size < 200 ? size : 200);
  if (!s) return;
  char job[AGENT_JOB_ID_MAX + 1];
  const char *name = NULL;
  if (agent_jobtput_split(s, job, sizeof job, &name) == 0) {
    fuzz_check(job[0] == '\0' || agent_job_id_valid(job));
    fuzz_check(name >= s && name <= s + strlen(s));
  }
  (void)agent_job_id_valid(s);
  free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct agent_job_req r;
  struct agent_error e;
  memset(&e, 0, sizeof e);
  int err = agent_job_parse((const char *)data, size, NGPUS, &r, &e);
  if (err == 0) {
    fuzz_check(r.n >= 1 && r.n <= AGENT_MAX_GPUS);
    fuzz_check(r.metrics_url[0] == '\0' || strncmp(r.metrics_url, "http://", 7) == 0);
    fuzz_check(r.metric[0] != '\0');
    for (size_t k = 0; k < r.n; k++) {
      fuzz_check(r.gpus[k] < NGPUS);
      for (size_t j = 0; j < k; j++)
        fuzz_check(r.gpus[j] != r.gpus[k]);
    }
  } else {
    fuzz_check(err == -EINVAL);
    fuzz_check(e.status >= 400 && e.status < 500);
    fuzz_check(e.message[0] != '\0');
  }
  check_split(data, size);
  return 0;
}
