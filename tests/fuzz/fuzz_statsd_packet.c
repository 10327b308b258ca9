/* pflex_statsd_parse_packet on a datagram's bytes, every metric fed to the
 * throughput meters a sampler uses (counter, gauge and timing names), at
 * times that advance by one second per line: lines are counted (good + bad =
 * non-empty lines) and every throughput sample a meter gives is a finite,
 * non-negative number, what pflex_series_add_tput accepts. */
#include "fuzz.h"

#include <errno.h>
#include <math.h>

#include "pflex/tput.h"

/* fuzz-args: -max_len=4096 */

struct state {
  struct pflex_tput_meter meters[3];
  size_t good;
  double t;
};

static int on_metric(const struct pflex_statsd_metric *metric, double time_s, void *userdata) {
  struct state *st = userdata;
  st->good++;
  st->t += 1.0;
  for (size_t i = 0; i < 3; i++) {
    double ts, v;
    int r = pflex_tput_meter_feed(&st->meters[i], metric, time_s + st->t, &ts, &v);
    fuzz_check(r == 0 || r == -EAGAIN || r == -ENOENT || r == -EINVAL);
    if (r == 0) {
      if (!(isfinite(v) && v >= 0)) fprintf(stderr, "meter %s gave %g\n", st->meters[i].name, v);
      fuzz_check(isfinite(v) && v >= 0);
      fuzz_check(isfinite(ts));
    }
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct state st = {0};
  pflex_tput_meter_init(&st.meters[0], "tokens", 0);
  pflex_tput_meter_init(&st.meters[1], "tokens_per_s", 0);
  pflex_tput_meter_init(&st.meters[2], "step_time", 0);
  size_t bad = 0;
  int r = pflex_statsd_parse_packet((const char *)data, size, 1e9, on_metric, &st, &bad);
  fuzz_check(r == 0);
  size_t lines = 0; /* non-empty lines, as the parser defines them */
  for (size_t i = 0; i < size;) {
    const uint8_t *nl = memchr(data + i, '\n', size - i);
    size_t end = nl ? (size_t)(nl - data) : size;
    size_t len = end - i;
    if (len && !(len == 1 && data[i] == '\r')) lines++;
    i = end + 1;
  }
  fuzz_check(st.good + bad == lines);
  return 0;
}
