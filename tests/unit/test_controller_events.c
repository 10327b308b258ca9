/* Unit tests of the controller's events (src/controller/events.c): request
 * validation naming the field, ISO 8601, levels with ramps, ending early, and
 * overlapping events (the lowest target wins). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "assert_near.h"
#include "controller/events.h"

#define NOW 1796126400.0 /* 2026-12-01T12:00:00Z */

static int parse(const char *body, struct ctl_event *e, struct ctl_field_error *err) {
  json_error_t je;
  json_t *j = json_loads(body, 0, &je);
  assert_non_null(j);
  memset(err, 0, sizeof *err);
  int rc = ctl_event_from_json(j, NOW, e, err);
  json_decref(j);
  return rc;
}

static void valid_requests(void **state) {
  struct ctl_event e;
  struct ctl_field_error err;
  assert_int_equal(parse("{\"target_w\":1e6,\"start\":\"now\",\"duration_s\":600}", &e, &err), 0);
  assert_near(e.target_w, 1e6, 0);
  assert_near(e.start, NOW, 0);
  assert_near(e.duration_s, 600, 0);
  assert_near(e.ramp_s, 0, 0);
  assert_int_equal(parse("{\"cut_pct\":30,\"start\":\"2026-12-01T13:00:00+01:00\","
                         "\"duration_s\":60,\"ramp_s\":10,\"priority\":5}",
                         &e, &err),
                   0);
  assert_near(e.cut_pct, 30, 0);
  assert_near(e.start, NOW, 0); /* 13:00 at +01:00 is 12:00Z */
  assert_int_equal(e.priority, 5);
  assert_string_equal(e.source, "api");
}

struct bad {
  const char *body;
  int status;
  const char *field;
};

static void invalid_requests_name_the_field(void **state) {
  static const struct bad cases[] = {
      {"[]", 400, ""},
      {"{\"target_w\":1000,\"start\":\"now\",\"duration_s\":60,\"colour\":1}", 400, "colour"},
      {"{\"start\":\"now\",\"duration_s\":60}", 400, "target_w"},
      {"{\"target_w\":1,\"cut_pct\":3,\"start\":\"now\",\"duration_s\":60}", 400, "cut_pct"},
      {"{\"target_w\":\"1000\",\"start\":\"now\",\"duration_s\":60}", 400, "target_w"},
      {"{\"target_w\":-5,\"start\":\"now\",\"duration_s\":60}", 422, "target_w"},
      {"{\"target_w\":0,\"start\":\"now\",\"duration_s\":60}", 422, "target_w"},
      {"{\"cut_pct\":100,\"start\":\"now\",\"duration_s\":60}", 422, "cut_pct"},
      {"{\"cut_pct\":0,\"start\":\"now\",\"duration_s\":60}", 422, "cut_pct"},
      {"{\"target_w\":1000,\"duration_s\":60}", 400, "start"},
      {"{\"target_w\":1000,\"start\":\"tomorrow\",\"duration_s\":60}", 400, "start"},
      {"{\"target_w\":1000,\"start\":\"2026-12-01T12:00:00\",\"duration_s\":60}", 400, "start"},
      {"{\"target_w\":1000,\"start\":\"2026-02-30T12:00:00Z\",\"duration_s\":60}", 400, "start"},
      {"{\"target_w\":1000,\"start\":\"2026-12-01T10:00:00Z\",\"duration_s\":60}", 422, "start"},
      {"{\"target_w\":1000,\"start\":\"now\"}", 400, "duration_s"},
      {"{\"target_w\":1000,\"start\":\"now\",\"duration_s\":0}", 422, "duration_s"},
      {"{\"target_w\":1000,\"start\":\"now\",\"duration_s\":60,\"ramp_s\":61}", 422, "ramp_s"},
      {"{\"target_w\":1000,\"start\":\"now\",\"duration_s\":60,\"ramp_s\":-1}", 422, "ramp_s"},
      {"{\"target_w\":1000,\"start\":\"now\",\"duration_s\":60,\"priority\":1.5}", 400, "priority"},
      {"{\"target_w\":1000,\"start\":\"now\",\"duration_s\":60,\"priority\":5000}", 422,
       "priority"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct ctl_event e;
    struct ctl_field_error err;
    if (parse(cases[i].body, &e, &err) != -EINVAL) fail_msg("accepted %s", cases[i].body);
    if (err.status != cases[i].status || strcmp(err.field, cases[i].field) != 0)
      fail_msg("%s: got %d '%s' (%s), expected %d '%s'", cases[i].body, err.status, err.field,
               err.message, cases[i].status, cases[i].field);
  }
}

static void iso8601_round_trip(void **state) {
  double t;
  assert_int_equal(ctl_parse_iso8601("1970-01-01T00:00:00Z", &t), 0);
  assert_near(t, 0, 0);
  assert_int_equal(ctl_parse_iso8601("2024-02-29T23:59:59.250-02:30", &t), 0);
  char buf[40];
  ctl_format_iso8601(t, buf, sizeof buf);
  assert_string_equal(buf, "2024-03-01T02:29:59.250Z");
  assert_int_equal(ctl_parse_iso8601("2023-02-29T00:00:00Z", &t), -EINVAL);
  assert_int_equal(ctl_parse_iso8601("2024-01-01T24:00:00Z", &t), -EINVAL);
  assert_int_equal(ctl_parse_iso8601("2024-01-01T00:00:00Zjunk", &t), -EINVAL);
}

static struct ctl_event ev(int64_t id, double target, double start, double dur, double ramp,
                           double baseline) {
  struct ctl_event e = {.id = id,
                        .target_w = target,
                        .start = start,
                        .duration_s = dur,
                        .ramp_s = ramp,
                        .baseline_w = baseline};
  return e;
}

static void ramp_levels(void **state) {
  struct ctl_event e = ev(1, 700, 100, 60, 10, 1000);
  double l;
  assert_false(ctl_event_level(&e, 99.9, &l));
  assert_int_equal(ctl_event_state_at(&e, 99.9), CTL_EVENT_SCHEDULED);
  assert_true(ctl_event_level(&e, 100, &l));
  assert_near(l, 1000, 1e-9);
  assert_true(ctl_event_level(&e, 105, &l));
  assert_near(l, 850, 1e-9);
  assert_true(ctl_event_level(&e, 130, &l));
  assert_near(l, 700, 1e-9);
  assert_true(ctl_event_level(&e, 165, &l)); /* release ramp: 5 s of 10 */
  assert_near(l, 850, 1e-9);
  assert_false(ctl_event_level(&e, 170, &l));
  assert_int_equal(ctl_event_state_at(&e, 170), CTL_EVENT_DONE);
  /* Ended early in the ramp down at 105 (level 850): released from 850 at 30 W/s. */
  e.ended_early = 105;
  assert_true(ctl_event_level(&e, 107, &l));
  assert_near(l, 910, 1e-9);
  assert_false(ctl_event_level(&e, 110, &l));
  assert_int_equal(ctl_event_state_at(&e, 110), CTL_EVENT_DONE);
  assert_string_equal(ctl_event_state_name(CTL_EVENT_DONE), "ended");
  /* Ended before its start: cancelled, before and after the start, never in force. */
  e.ended_early = 90;
  assert_int_equal(ctl_event_state_at(&e, 95), CTL_EVENT_CANCELLED);
  assert_int_equal(ctl_event_state_at(&e, 120), CTL_EVENT_CANCELLED);
  assert_false(ctl_event_level(&e, 120, &l));
  assert_string_equal(ctl_event_state_name(CTL_EVENT_CANCELLED), "cancelled");
  e.ended_early = 105;
  /* cut_pct resolves against the baseline; a step without ramp. */
  struct ctl_event c = ev(2, 0, 0, 10, 0, 2000);
  c.cut_pct = 30;
  assert_true(ctl_event_level(&c, 5, &l));
  assert_near(l, 1400, 1e-9);
  assert_false(ctl_event_level(&c, 10, &l));
}

static void overlap_lowest_wins(void **state) {
  struct ctl_event v[3] = {ev(1, 800, 0, 100, 0, 1000), ev(2, 600, 50, 100, 0, 1000),
                           ev(3, 600, 40, 100, 0, 1000)};
  v[2].priority = 1;
  double t;
  size_t gi;
  assert_true(ctl_events_target(v, 3, 10, &t, &gi));
  assert_near(t, 800, 0);
  assert_int_equal(gi, 0);
  assert_true(ctl_events_target(v, 3, 45, &t, &gi));
  assert_near(t, 600, 0);
  assert_int_equal(gi, 2);
  assert_true(ctl_events_target(v, 3, 60, &t, &gi)); /* equal targets: higher priority */
  assert_int_equal(gi, 2);
  v[2].priority = 0;
  assert_true(ctl_events_target(v, 3, 60, &t, &gi)); /* equal priority: older id */
  assert_int_equal(gi, 1);
  assert_true(ctl_events_target(v, 3, 145, &t, &gi)); /* only event 2 still on */
  assert_int_equal(gi, 1);
  assert_false(ctl_events_target(v, 3, 150, &t, &gi));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(valid_requests),      cmocka_unit_test(invalid_requests_name_the_field),
      cmocka_unit_test(iso8601_round_trip),  cmocka_unit_test(ramp_levels),
      cmocka_unit_test(overlap_lowest_wins),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
