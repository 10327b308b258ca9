/* pflex_tput_regex_feed on a job's output cut into chunks at arbitrary
 * places (the first input byte seeds the cut points), with the default
 * pattern and with a user pattern for a time per step: never crashes, every
 * value passed on is finite and positive, and the values do not depend on
 * where the reads were cut: feeding everything in one piece gives the same. */
#include "fuzz.h"

#include <math.h>

#include "pflex/tput.h"

/* fuzz-args: -max_len=8192 */

struct values {
  double v[64];
  size_t n, total;
};

static int on_value(double time_s, double value, void *userdata) {
  struct values *vs = userdata;
  fuzz_check(isfinite(value) && value > 0);
  if (vs->n < 64) vs->v[vs->n++] = value;
  vs->total++;
  return 0;
}

static const struct pflex_tput_regex_opts option_sets[] = {
    {0},
    {.pattern = "step_time[=:] *([0-9.e+-]+)", .per_step_time = true, .skip = "", .scale = 8},
};

static void feed(const struct pflex_tput_regex_opts *opts, const uint8_t *data, size_t size,
                 unsigned seed, struct values *out) {
  struct pflex_tput_regex re;
  char errbuf[128];
  fuzz_check(pflex_tput_regex_init(&re, opts, errbuf, sizeof errbuf) == 0);
  for (size_t i = 0; i < size;) {
    size_t chunk = seed ? 1 + (seed = seed * 1103515245u + 12345u) % 97 : size;
    if (chunk > size - i) chunk = size - i;
    fuzz_check(pflex_tput_regex_feed(&re, (const char *)data + i, chunk, 1.0, on_value, out) == 0);
    i += chunk;
  }
  fuzz_check(pflex_tput_regex_feed(&re, NULL, 0, 1.0, on_value, out) == 0);
  fuzz_check(re.matched == out->total);
  pflex_tput_regex_release(&re);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  unsigned seed = data[0] | 1u;
  for (size_t k = 0; k < sizeof option_sets / sizeof *option_sets; k++) {
    struct values cut = {0}, whole = {0};
    feed(&option_sets[k], data + 1, size - 1, seed, &cut);
    feed(&option_sets[k], data + 1, size - 1, 0, &whole);
    fuzz_check(cut.total == whole.total);
    for (size_t i = 0; i < cut.n; i++)
      fuzz_check(cut.v[i] == whole.v[i]);
  }
  return 0;
}
