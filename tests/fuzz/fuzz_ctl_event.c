/* The controller's POST /v1/events body (ctl_event_parse_body) and the ISO
 * 8601 times it takes, on arbitrary bytes. Checked on every input: an
 * accepted event has exactly one of target_w and cut_pct, every field in
 * its range, a ramp no longer than the event, an end after now, and a level
 * between the target and the baseline at any time of its window; a refused
 * one names a 400 or 422 and a message. A time the parser accepts formats
 * back to one it reads as the same instant. */
#include "fuzz.h"

#include <errno.h>
#include <math.h>

#include "controller/events.h"

/* fuzz-link: pflex_controller */
/* fuzz-args: -max_len=4096 */

#define NOW 1.8e9 /* 2027-01-15 */

static void check_event(const struct ctl_event *e) {
  fuzz_check((e->target_w > 0) != (e->cut_pct > 0));
  fuzz_check(e->target_w >= 0 && e->target_w <= CTL_EVENT_MAX_TARGET_W);
  fuzz_check(e->cut_pct >= 0 && e->cut_pct < 100);
  fuzz_check(e->duration_s > 0 && e->duration_s <= CTL_EVENT_MAX_DURATION_S);
  fuzz_check(e->ramp_s >= 0 && e->ramp_s <= e->duration_s);
  fuzz_check(abs(e->priority) <= CTL_EVENT_PRIORITY_LIMIT);
  fuzz_check(isfinite(e->start) && e->start + e->duration_s > NOW);
  fuzz_check(e->id == 0 && e->baseline_w == 0 && strcmp(e->source, "api") == 0);
  struct ctl_event b = *e;
  b.baseline_w = 1e6; /* a baseline above any target a cut can give */
  double target = ctl_event_resolved_target(&b), lo = fmin(target, b.baseline_w),
         hi = fmax(target, b.baseline_w);
  for (int k = 0; k <= 8; k++) {
    double t = b.start + b.duration_s * k / 8.0 - (k == 8 ? 1e-6 * b.duration_s : 0), level;
    if (!ctl_event_level(&b, t, &level)) continue;
    fuzz_check(isfinite(level) && level >= lo - 1e-6 * hi && level <= hi + 1e-6 * hi);
  }
}

static void check_time(const char *s) {
  double t;
  if (ctl_parse_iso8601(s, &t) < 0) return;
  fuzz_check(isfinite(t) && t >= 0);
  char buf[64];
  ctl_format_iso8601(t, buf, sizeof buf);
  double back;
  fuzz_check(ctl_parse_iso8601(buf, &back) == 0);
  fuzz_check(fabs(back - t) < 1e-3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct ctl_event e;
  struct ctl_field_error fe;
  memset(&fe, 0, sizeof fe);
  int rc = ctl_event_parse_body((const char *)data, size, NOW, &e, &fe);
  if (rc == 0) {
    check_event(&e);
  } else {
    fuzz_check(rc == -EINVAL);
    fuzz_check(fe.status == 400 || fe.status == 422);
    fuzz_check(fe.message[0] != '\0');
  }
  char *s = fuzz_cstr(data, size);
  if (s) check_time(s);
  free(s);
  return 0;
}
