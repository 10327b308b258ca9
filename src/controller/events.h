/* Grid events: a power target for the cluster over a time window.
 *
 * An event asks for target_w (W) or cut_pct (% of the cluster's uncapped draw
 * measured just before it starts: the baseline), from start for duration_s,
 * optionally reached gradually over ramp_s (and released over ramp_s after
 * it ends). Overlapping events: the lowest target wins; among equal targets
 * the higher priority, then the older event, is reported as governing.
 *
 * The level of one event at time t (baseline B, resolved target T, ramp r):
 *   t < start                      none (scheduled)
 *   start <= t < start + r         B + (T - B) (t - start) / r
 *   start + r <= t < end           T
 *   t >= end                       L(end) + (B - T) (t - end) / r, until it reaches B
 * where end is start + duration_s, or the time it was ended early (DELETE),
 * and L(end) the level at that moment. With r = 0 the event is a step. */
#ifndef CTL_EVENTS_H
#define CTL_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define CTL_EVENT_MAX_DURATION_S (31.0 * 86400.0)
#define CTL_EVENT_MAX_TARGET_W 1e9
#define CTL_EVENT_PRIORITY_LIMIT 1000

enum ctl_event_state {
  CTL_EVENT_SCHEDULED = 0, /* start not reached */
  CTL_EVENT_ACTIVE,        /* between start and the end of its release ramp */
  CTL_EVENT_DONE,          /* released */
  CTL_EVENT_CANCELLED,     /* ended (DELETE) before its start: never active */
};

struct ctl_event {
  int64_t id;      /* assigned by the store; 0 before */
  double target_w; /* asked for; 0 when cut_pct is used */
  double cut_pct;  /* asked for; 0 when target_w is used */
  double start;    /* epoch seconds */
  double duration_s;
  double ramp_s; /* 0: a step */
  int priority;
  double created;     /* epoch seconds */
  double ended_early; /* epoch seconds of DELETE, 0 if not */
  double baseline_w;  /* uncapped draw measured at start; 0 until it started */
  char source[16];    /* "api" or "schedule" */
};

/* Why a request was refused: the field to blame and a message, and the HTTP
 * status that goes with it (400 malformed, 422 out of range). */
struct ctl_field_error {
  int status;
  char field[32];
  char message[160];
};

/* Parses and validates an event request body (already parsed JSON) at time
 * now. Only the fields target_w | cut_pct, start, duration_s, ramp_s and
 * priority are accepted; anything else is refused naming the field. On
 * success fills *ret (id 0, baseline 0) and returns 0; otherwise fills *err
 * and returns -EINVAL. */
int ctl_event_from_json(const json_t *body, double now, struct ctl_event *ret,
                        struct ctl_field_error *err);

/* The same from the raw body of POST /v1/events (len bytes; duplicate keys
 * refused): malformed JSON is a 400 naming the offset. */
int ctl_event_parse_body(const char *body, size_t len, double now, struct ctl_event *ret,
                         struct ctl_field_error *err);

/* Parses ISO 8601 "YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)" (a time zone
 * is required) into epoch seconds. -EINVAL otherwise. */
int ctl_parse_iso8601(const char *s, double *ret_epoch);
/* Formats epoch seconds as "YYYY-MM-DDTHH:MM:SS.mmmZ". */
void ctl_format_iso8601(double epoch, char *buf, size_t size);

/* The event's resolved target: target_w, or (1 - cut_pct/100) * baseline. */
double ctl_event_resolved_target(const struct ctl_event *e);
/* Its end: start + duration_s or the time it was ended early, whichever is first. */
double ctl_event_end(const struct ctl_event *e);
/* Its state at time t. */
enum ctl_event_state ctl_event_state_at(const struct ctl_event *e, double t);
/* Its level at time t when active (see the header comment); *ret_level is
 * written and true returned only while it is active. A cut_pct event that
 * has started before its baseline was taken is active with level NAN (the
 * controller takes the baseline in the round that sees it start); without a
 * baseline a target_w event's ramp is a step. */
bool ctl_event_level(const struct ctl_event *e, double t, double *ret_level);

/* The effective target of n events at time t: the lowest finite active level. Writes
 * the governing event's index into *ret_index (may be NULL) and returns true
 * when some event is active; false (nothing written) when none is. */
bool ctl_events_target(const struct ctl_event *events, size_t n, double t, double *ret_target_w,
                       size_t *ret_index);

/* The event as JSON (for GET /v1/events and the store), state at time now. */
json_t *ctl_event_to_json(const struct ctl_event *e, double now);
const char *ctl_event_state_name(enum ctl_event_state s);

#endif
