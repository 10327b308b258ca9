/* Grid events: validation of requests, levels over time, overlap (events.h). */
#include "controller/events.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int field_error(struct ctl_field_error *err, int status, const char *field,
                       const char *msg) {
  if (err) {
    err->status = status;
    snprintf(err->field, sizeof err->field, "%s", field);
    snprintf(err->message, sizeof err->message, "%s", msg);
  }
  return -EINVAL;
}

/* The accepted fields: type, range, where the value goes. */
enum field_kind { F_NUMBER, F_INTEGER, F_TIME };
struct field_rule {
  const char *name;
  enum field_kind kind;
  double lo, hi; /* accepted range */
  bool lo_open;  /* lo itself excluded */
  bool hi_open;  /* hi itself excluded */
  size_t offset; /* where in struct ctl_event (double or int) */
};

#define OFF(f) offsetof(struct ctl_event, f)
static const struct field_rule RULES[] = {
    {"target_w", F_NUMBER, 0, CTL_EVENT_MAX_TARGET_W, true, false, OFF(target_w)},
    {"cut_pct", F_NUMBER, 0, 100, true, true, OFF(cut_pct)},
    {"start", F_TIME, 0, 0, false, false, OFF(start)},
    {"duration_s", F_NUMBER, 0, CTL_EVENT_MAX_DURATION_S, true, false, OFF(duration_s)},
    {"ramp_s", F_NUMBER, 0, CTL_EVENT_MAX_DURATION_S, false, false, OFF(ramp_s)},
    {"priority", F_INTEGER, -CTL_EVENT_PRIORITY_LIMIT, CTL_EVENT_PRIORITY_LIMIT, false, false,
     OFF(priority)},
};
#define NRULES (sizeof RULES / sizeof RULES[0])

static const struct field_rule *rule_find(const char *name) {
  for (size_t i = 0; i < NRULES; i++)
    if (strcmp(RULES[i].name, name) == 0) return &RULES[i];
  return NULL;
}

static int read_time(const json_t *v, double now, double *ret, struct ctl_field_error *err) {
  if (!json_is_string(v))
    return field_error(err, 400, "start",
                       "must be a string: ISO 8601 with a time zone, or \"now\"");
  const char *s = json_string_value(v);
  if (strcmp(s, "now") == 0) {
    *ret = now;
    return 0;
  }
  if (ctl_parse_iso8601(s, ret) < 0)
    return field_error(err, 400, "start",
                       "not ISO 8601 with a time zone (e.g. 2026-12-01T14:00:00Z) nor \"now\"");
  return 0;
}

static int read_field(const struct field_rule *r, const json_t *v, double now, struct ctl_event *e,
                      struct ctl_field_error *err) {
  char msg[160];
  if (r->kind == F_TIME) return read_time(v, now, (double *)((char *)e + r->offset), err);
  if (r->kind == F_INTEGER ? !json_is_integer(v) : !json_is_number(v))
    return field_error(err, 400, r->name,
                       r->kind == F_INTEGER ? "must be an integer" : "must be a number");
  double x = json_number_value(v);
  bool below = r->lo_open ? !(x > r->lo) : !(x >= r->lo);
  bool above = r->hi_open ? !(x < r->hi) : !(x <= r->hi);
  if (!isfinite(x) || below || above) {
    snprintf(msg, sizeof msg, "%g is out of range %s%g, %g%s", x, r->lo_open ? "(" : "[", r->lo,
             r->hi, r->hi_open ? ")" : "]");
    return field_error(err, 422, r->name, msg);
  }
  if (r->kind == F_INTEGER)
    *(int *)((char *)e + r->offset) = (int)x;
  else
    *(double *)((char *)e + r->offset) = x;
  return 0;
}

/* Rules between fields, after each field passed its own. */
static int check_combination(const json_t *body, const struct ctl_event *e, double now,
                             struct ctl_field_error *err) {
  bool has_target = json_object_get(body, "target_w") != NULL;
  bool has_cut = json_object_get(body, "cut_pct") != NULL;
  if (has_target == has_cut)
    return field_error(err, 400, has_cut ? "cut_pct" : "target_w",
                       "give exactly one of target_w and cut_pct");
  if (!json_object_get(body, "start"))
    return field_error(err, 400, "start", "missing (ISO 8601 or \"now\")");
  if (!json_object_get(body, "duration_s")) return field_error(err, 400, "duration_s", "missing");
  if (e->ramp_s > e->duration_s) return field_error(err, 422, "ramp_s", "longer than duration_s");
  if (e->start + e->duration_s <= now)
    return field_error(err, 422, "start", "the event would already be over");
  return 0;
}

int ctl_event_from_json(const json_t *body, double now, struct ctl_event *ret,
                        struct ctl_field_error *err) {
  if (!json_is_object(body)) return field_error(err, 400, "", "the body must be a JSON object");
  struct ctl_event e = {0};
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)body, key, v) {
    const struct field_rule *r = rule_find(key);
    if (!r) {
      char msg[160];
      snprintf(msg, sizeof msg, "unknown field '%.100s'", key);
      return field_error(err, 400, key, msg);
    }
    int rc = read_field(r, v, now, &e, err);
    if (rc < 0) return rc;
  }
  int rc = check_combination(body, &e, now, err);
  if (rc < 0) return rc;
  e.created = now;
  snprintf(e.source, sizeof e.source, "api");
  *ret = e;
  return 0;
}

int ctl_event_parse_body(const char *body, size_t len, double now, struct ctl_event *ret,
                         struct ctl_field_error *err) {
  json_error_t je;
  json_t *o = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &je);
  if (!o) {
    char msg[160];
    snprintf(msg, sizeof msg, "malformed JSON: %.100s (offset %d)", je.text, je.position);
    return field_error(err, 400, "", msg);
  }
  int rc = ctl_event_from_json(o, now, ret, err);
  json_decref(o);
  return rc;
}

static int two(const char *s) {
  if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9') return -1;
  return (s[0] - '0') * 10 + (s[1] - '0');
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's algorithm). */
static long days_from_civil(long y, int m, int d) {
  y -= m <= 2;
  long era = (y >= 0 ? y : y - 399) / 400;
  long yoe = y - era * 400;
  long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m) {
  static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : dm[m - 1];
}

int ctl_parse_iso8601(const char *s, double *ret_epoch) {
  if (strlen(s) < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
      s[13] != ':' || s[16] != ':')
    return -EINVAL;
  int y1 = two(s), y2 = two(s + 2), mo = two(s + 5), d = two(s + 8), h = two(s + 11),
      mi = two(s + 14), se = two(s + 17);
  if (y1 < 0 || y2 < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
      se < 0 || se > 59)
    return -EINVAL;
  int y = y1 * 100 + y2;
  if (y < 1970 || d > days_in_month(y, mo)) return -EINVAL;
  const char *p = s + 19;
  double frac = 0, scale = 0.1;
  if (*p == '.') {
    if (p[1] < '0' || p[1] > '9') return -EINVAL;
    for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
      frac += (*p - '0') * scale;
  }
  long offset = 0;
  if ((*p == 'Z' || *p == 'z') && p[1] == '\0') {
    offset = 0;
  } else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
    int oh = two(p + 1), om = two(p + 4);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return -EINVAL;
    offset = (*p == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
  } else {
    return -EINVAL;
  }
  long t = days_from_civil(y, mo, d) * 86400L + h * 3600L + mi * 60L + se - offset;
  if (t < 0) return -EINVAL; /* before 1970 UTC (a 1970 date with an offset east) */
  *ret_epoch = (double)t + frac;
  return 0;
}

void ctl_format_iso8601(double epoch, char *buf, size_t size) {
  /* The nearest millisecond: flooring (epoch - t) * 1000 turned x.9 s into
   * x.899 where a double holds x.9 just below (found by fuzz_ctl_event). */
  double whole = floor(epoch);
  long ms = lround((epoch - whole) * 1000.0);
  if (ms >= 1000) {
    whole += 1;
    ms -= 1000;
  }
  time_t t = (time_t)whole;
  struct tm tm;
  gmtime_r(&t, &tm);
  snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

double ctl_event_resolved_target(const struct ctl_event *e) {
  if (e->cut_pct > 0) return (1.0 - e->cut_pct / 100.0) * e->baseline_w;
  return e->target_w;
}

double ctl_event_end(const struct ctl_event *e) {
  double end = e->start + e->duration_s;
  return e->ended_early > 0 && e->ended_early < end ? e->ended_early : end;
}

/* Level before the end: the ramp down from the baseline, then the target. */
static double level_down(const struct ctl_event *e, double t, double target) {
  if (e->ramp_s <= 0 || e->baseline_w <= 0 || t >= e->start + e->ramp_s) return target;
  double f = (t - e->start) / e->ramp_s;
  return e->baseline_w + (target - e->baseline_w) * (f < 0 ? 0 : f);
}

bool ctl_event_level(const struct ctl_event *e, double t, double *ret_level) {
  if (t < e->start) return false;
  if (e->cut_pct > 0 && e->baseline_w <= 0) { /* started, its baseline not yet taken */
    if (t >= ctl_event_end(e)) return false;
    *ret_level = NAN;
    return true;
  }
  double target = ctl_event_resolved_target(e);
  double end = ctl_event_end(e);
  if (t < end) {
    *ret_level = level_down(e, t, target);
    return true;
  }
  if (e->ramp_s <= 0 || e->baseline_w <= 0 || e->baseline_w <= target) return false;
  double level = level_down(e, end, target) + (e->baseline_w - target) * (t - end) / e->ramp_s;
  if (level >= e->baseline_w) return false;
  *ret_level = level;
  return true;
}

enum ctl_event_state ctl_event_state_at(const struct ctl_event *e, double t) {
  double level;
  if (e->ended_early > 0 && e->ended_early <= e->start) return CTL_EVENT_CANCELLED;
  if (t < e->start && e->ended_early == 0) return CTL_EVENT_SCHEDULED;
  return ctl_event_level(e, t, &level) ? CTL_EVENT_ACTIVE : CTL_EVENT_DONE;
}

bool ctl_events_target(const struct ctl_event *events, size_t n, double t, double *ret_target_w,
                       size_t *ret_index) {
  bool any = false;
  double best = 0;
  size_t bi = 0;
  for (size_t i = 0; i < n; i++) {
    double level;
    if (!ctl_event_level(&events[i], t, &level) || !isfinite(level)) continue;
    bool better = !any || level < best ||
                  (level == best &&
                   (events[i].priority > events[bi].priority ||
                    (events[i].priority == events[bi].priority && events[i].id < events[bi].id)));
    if (better) {
      any = true;
      best = level;
      bi = i;
    }
  }
  if (any) {
    *ret_target_w = best;
    if (ret_index) *ret_index = bi;
  }
  return any;
}

const char *ctl_event_state_name(enum ctl_event_state s) {
  static const char *const names[] = {"scheduled", "active", "ended", "cancelled"};
  return s <= CTL_EVENT_CANCELLED ? names[s] : "?";
}

json_t *ctl_event_to_json(const struct ctl_event *e, double now) {
  char start[40], created[40];
  ctl_format_iso8601(e->start, start, sizeof start);
  ctl_format_iso8601(e->created, created, sizeof created);
  json_t *o = json_pack(
      "{s:I, s:s, s:f, s:f, s:i, s:s, s:s, s:s}", "id", (json_int_t)e->id, "start", start,
      "duration_s", e->duration_s, "ramp_s", e->ramp_s, "priority", e->priority, "state",
      ctl_event_state_name(ctl_event_state_at(e, now)), "created", created, "source", e->source);
  if (!o) return NULL;
  if (e->cut_pct > 0)
    json_object_set_new(o, "cut_pct", json_real(e->cut_pct));
  else
    json_object_set_new(o, "target_w", json_real(e->target_w));
  if (e->baseline_w > 0) {
    json_object_set_new(o, "baseline_w", json_real(e->baseline_w));
    json_object_set_new(o, "resolved_target_w", json_real(ctl_event_resolved_target(e)));
  }
  if (e->ended_early > 0) {
    char ended[40];
    ctl_format_iso8601(e->ended_early, ended, sizeof ended);
    json_object_set_new(o, "ended_early", json_string(ended));
  }
  double level;
  if (ctl_event_level(e, now, &level) && isfinite(level))
    json_object_set_new(o, "level_w", json_real(level));
  return o;
}
