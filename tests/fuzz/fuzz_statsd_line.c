/* pflex_statsd_parse_line: any bytes (NULs included, no terminator: the
 * buffer is exactly the line) give -EINVAL or a metric that keeps the
 * documented rules: a non-empty name without ':' '|' or blanks, a finite
 * value, a rate in (0, 1], a known type. */
#include "fuzz.h"

#include <errno.h>
#include <math.h>

#include "pflex/tput.h"

/* fuzz-args: -max_len=512 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pflex_statsd_metric m;
  int err = pflex_statsd_parse_line((const char *)data, size, &m);
  fuzz_check(err == 0 || err == -EINVAL);
  if (err) return 0;
  size_t n = strlen(m.name);
  fuzz_check(n >= 1 && n < PFLEX_STATSD_NAME_MAX);
  fuzz_check(strpbrk(m.name, ":| \t\r\n") == NULL);
  fuzz_check(isfinite(m.value));
  fuzz_check(m.sample_rate > 0 && m.sample_rate <= 1);
  fuzz_check(m.type >= PFLEX_STATSD_COUNTER && m.type <= PFLEX_STATSD_HISTOGRAM);
  fuzz_check(!m.delta || m.type == PFLEX_STATSD_GAUGE);
  return 0;
}
