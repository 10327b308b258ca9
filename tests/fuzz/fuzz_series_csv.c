/* pflex_series_read_csv (pflex aggregate's telemetry input) on arbitrary
 * bytes, then what pflex aggregate does with an accepted series: phases and
 * the aggregate (docs/telemetry.md). Neither may crash or hit UB; an accepted
 * series holds GPU samples with indexes >= 0, finite times, and finite
 * non-negative throughput samples. */
#include "fuzz.h"

#include <math.h>

#include "pflex/series.h"
#include "pflex/series_csv.h"

/* fuzz-args: -max_len=8192 */

static void check_series(const struct pflex_series *s) {
  fuzz_check(s->n > 0);
  for (size_t i = 0; i < s->n; i++)
    fuzz_check(s->gpu[i] >= 0 && isfinite(s->time_s[i]));
  for (size_t i = 0; i < s->ntput; i++)
    fuzz_check(isfinite(s->tput_time_s[i]) && isfinite(s->tput[i]) && s->tput[i] >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const struct pflex_series_read_opts option_sets[] = {
      {0}, {.tput_column = "step_s", .per_step_time = true}};
  for (size_t k = 0; k < 2; k++) {
    const char *path = fuzz_path(data, size);
    if (!path) return 0;
    struct pflex_series s;
    struct pflex_diag diag = {0};
    pflex_series_init(&s);
    int err = pflex_series_read_csv(path, &option_sets[k], &s, &diag);
    fuzz_check(err <= 0);
    if (err == 0) {
      check_series(&s);
      struct pflex_phase_opts po;
      pflex_phase_opts_default(&po);
      enum pflex_phase *phases = NULL;
      if (pflex_series_phases(&s, &po, &phases, &diag) == 0) {
        for (size_t i = 0; i < s.n; i++)
          fuzz_check(phases[i] < PFLEX_PHASE_COUNT);
        free(phases);
      }
      struct pflex_series_agg agg;
      memset(&agg, 0, sizeof agg);
      if (pflex_series_aggregate(&s, &po, &agg, &diag) == 0) {
        fuzz_check(agg.gpus >= 1);
        fuzz_check(!agg.power.valid || isfinite(agg.power.value));
        pflex_series_agg_release(&agg);
      }
    }
    pflex_series_release(&s);
  }
  return 0;
}
