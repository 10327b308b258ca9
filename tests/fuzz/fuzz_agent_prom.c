/* agent_prom_sum (the Prometheus text a job's endpoint serves, scraped by
 * pflexd) on arbitrary bytes, for a few metric names. Contract: a sum is
 * a number (finite values may overflow to inf) from at least one series; the parse never reads past the
 * input (ASan), whatever the labels, quotes and line ends. */
#include "fuzz.h"

#include <errno.h>
#include <math.h>

#include "agent/promtext.h"

/* fuzz-link: pflex_agent */
/* fuzz-args: -max_len=16384 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const names[] = {"tokens_per_second", "train_tokens_total", "a", NULL};
  /* A copy without a terminating NUL: the parser must respect the length. */
  char *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  if (size) memcpy(copy, data, size);
  for (size_t k = 0; names[k]; k++) {
    double sum = 0;
    size_t series = 0;
    int err = agent_prom_sum(copy, size, names[k], &sum, &series);
    fuzz_check(err == 0 || err == -ENOENT);
    if (err == 0) fuzz_check(series >= 1 && !isnan(sum)); /* finite values may sum to inf */
  }
  free(copy);
  return 0;
}
