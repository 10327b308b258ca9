/* agent_caps_parse (pflexd's PUT /v1/caps body) on arbitrary bytes. Its
 * contract is checked on every input: an accepted request has in-range
 * values only (GPU below the node's count, watts in (0, 10 kW], lease in
 * [0.1, max]), no GPU or job twice; a refused one names an HTTP 4xx status
 * and a message. */
#include "fuzz.h"

#include <errno.h>
#include <string.h>

#include "agent/body.h"

/* fuzz-link: pflex_agent */
/* fuzz-args: -max_len=8192 */

#define NGPUS 8

static void check_accepted(const struct agent_caps_req *r) {
  fuzz_check(r->n <= AGENT_MAX_GPUS);
  fuzz_check(r->lease_s >= 0.1 && r->lease_s <= 3600);
  fuzz_check(r->fallback_default || (r->fallback_mw > 0 && r->fallback_mw <= 10000000));
  for (size_t k = 0; k < r->n; k++) {
    const struct agent_cap_item *a = &r->items[k];
    fuzz_check(a->mw > 0 && a->mw <= 10000000);
    fuzz_check(a->by_job ? agent_job_id_valid(a->job) : a->gpu < NGPUS);
    for (size_t j = 0; j < k; j++) {
      const struct agent_cap_item *b = &r->items[j];
      fuzz_check(a->by_job != b->by_job ||
                 (a->by_job ? strcmp(a->job, b->job) != 0 : a->gpu != b->gpu));
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct agent_caps_req r;
  struct agent_error e;
  memset(&e, 0, sizeof e);
  int err = agent_caps_parse((const char *)data, size, NGPUS, 60, 3600, &r, &e);
  if (err == 0) {
    check_accepted(&r);
  } else {
    fuzz_check(err == -EINVAL);
    fuzz_check(e.status >= 400 && e.status < 500);
    fuzz_check(e.message[0] != '\0');
  }
  return 0;
}
