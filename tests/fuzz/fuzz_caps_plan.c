/* The mapping and caps file readers (pflex allocate --mapping, pflex cap set
 * --from) on arbitrary bytes. Properties: an accepted mapping has no GPU of a
 * node twice and names every entry; an accepted caps file holds positive
 * finite caps, and writing it back and reading it again gives the same caps
 * (what allocate writes, cap set reads). */
#include "fuzz.h"

#include <math.h>

#include "pflex/caps_plan.h"

/* fuzz-args: -max_len=4096 */

static void check_round_trip(const struct pflex_caps_plan *p) {
  char tmpl[] = "/tmp/pflex-fuzz-caps-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return;
  close(fd);
  struct pflex_caps_plan q;
  struct pflex_diag diag = {0};
  fuzz_check(pflex_caps_plan_write_json(tmpl, p) == 0);
  fuzz_check(pflex_caps_plan_read_json(tmpl, &q, &diag) == 0);
  unlink(tmpl);
  fuzz_check(q.n == p->n && q.provenance == p->provenance);
  for (size_t i = 0; i < p->n; i++) {
    fuzz_check(strcmp(q.caps[i].node, p->caps[i].node) == 0);
    fuzz_check(strcmp(q.caps[i].job, p->caps[i].job) == 0);
    fuzz_check(q.caps[i].gpu == p->caps[i].gpu);
    fuzz_check(fabs(q.caps[i].cap_w - p->caps[i].cap_w) <= 1e-9 * p->caps[i].cap_w);
  }
  pflex_caps_plan_release(&q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_path(data, size);
  if (!path) return 0;
  struct pflex_caps_plan p;
  struct pflex_diag diag = {0};
  int err = pflex_mapping_read_json(path, &p, &diag);
  fuzz_check(err <= 0);
  if (!err) {
    fuzz_check(p.n > 0);
    for (size_t i = 0; i < p.n; i++)
      fuzz_check(p.caps[i].node[0] && p.caps[i].job[0] && p.caps[i].gpu <= PFLEX_MAX_GPU_INDEX);
    pflex_caps_plan_release(&p);
  }
  err = pflex_caps_plan_read_json(path, &p, &diag);
  fuzz_check(err <= 0);
  if (!err) {
    for (size_t i = 0; i < p.n; i++)
      fuzz_check(isfinite(p.caps[i].cap_w) && p.caps[i].cap_w > 0);
    check_round_trip(&p);
    pflex_caps_plan_release(&p);
  }
  return 0;
}
