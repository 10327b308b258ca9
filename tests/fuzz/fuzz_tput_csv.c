/* pflex_series_read_tput_csv (a throughput-only CSV next to a series) on
 * arbitrary bytes, appended to a series that already holds one sample: all
 * or nothing (on error the series is as it was), and every sample appended
 * is finite and non-negative. */
#include "fuzz.h"

#include <math.h>

#include "pflex/series.h"
#include "pflex/series_csv.h"

/* fuzz-args: -max_len=8192 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const struct pflex_series_read_opts option_sets[] = {
      {0}, {.tput_column = "s_per_step", .per_step_time = true}};
  for (size_t k = 0; k < 2; k++) {
    const char *path = fuzz_path(data, size);
    if (!path) return 0;
    struct pflex_series s;
    struct pflex_diag diag = {0};
    pflex_series_init(&s);
    fuzz_check(pflex_series_add_tput(&s, 0.5, 100.0) == 0);
    int err = pflex_series_read_tput_csv(path, &option_sets[k], &s, &diag);
    fuzz_check(err <= 0);
    if (err) fuzz_check(s.ntput == 1);
    fuzz_check(s.tput_time_s[0] == 0.5 && s.tput[0] == 100.0);
    for (size_t i = 0; i < s.ntput; i++)
      fuzz_check(isfinite(s.tput_time_s[i]) && isfinite(s.tput[i]) && s.tput[i] >= 0);
    pflex_series_release(&s);
  }
  return 0;
}
