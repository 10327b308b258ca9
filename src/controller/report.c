/* `pflex-controller report EVENT` (report.h). */
#include "controller/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pflex/plot.h"

#define MARGIN_S 30.0

static int load(struct ctl_store *st, int64_t id, struct ctl_event *e, struct ctl_round_row **rows,
                size_t *n, char *err, size_t errlen) {
  int rc = ctl_store_event_get(st, id, e);
  if (rc < 0) {
    snprintf(err, errlen, "no event %lld in the store", (long long)id);
    return rc;
  }
  double end = ctl_event_end(e) + e->ramp_s;
  rc = ctl_store_rounds(st, e->start - MARGIN_S, end + MARGIN_S, rows, n);
  if (rc < 0) snprintf(err, errlen, "cannot read the rounds: %s", ctl_store_errmsg(st));
  return rc;
}

/* Index of the first round from which every round of the event is compliant. */
static size_t compliance_from(const struct ctl_round_row *r, size_t n, int64_t id) {
  size_t from = n;
  for (size_t i = n; i-- > 0;) {
    if (r[i].event_id != id) continue;
    if (r[i].compliant != 1) break;
    from = i;
  }
  return from;
}

int ctl_report_json(struct ctl_store *st, int64_t id, json_t **ret, char *err, size_t errlen) {
  struct ctl_event e;
  struct ctl_round_row *r = NULL;
  size_t n = 0;
  int rc = load(st, id, &e, &r, &n, err, errlen);
  if (rc < 0) return rc;
  size_t during = 0, over = 0, unreachable = 0, held = 0, from = compliance_from(r, n, id);
  double max_ms = 0, sum_ms = 0, rel = 0, max_over = 0;
  for (size_t i = 0; i < n; i++) {
    if (r[i].event_id != id) continue;
    during++;
    over += r[i].compliant == 0;
    unreachable += r[i].unreachable > 0;
    max_ms = fmax(max_ms, r[i].round_ms);
    sum_ms += r[i].round_ms;
    max_over = fmax(max_over, (r[i].measured_w - r[i].target_w) / r[i].target_w);
    if (r[i].t >= e.start + e.ramp_s && r[i].t < ctl_event_end(&e) && r[i].tput_uncapped > 0) {
      rel += r[i].tput / r[i].tput_uncapped;
      held++;
    }
  }
  size_t after = 0;
  for (size_t i = from; i < n; i++)
    after += r[i].event_id == id && r[i].compliant == 0;
  json_t *o = json_pack("{s:o, s:I, s:I, s:I, s:f, s:f}", "event", ctl_event_to_json(&e, e.start),
                        "rounds", (json_int_t)during, "rounds_over", (json_int_t)over,
                        "rounds_with_unreachable", (json_int_t)unreachable, "round_ms_max", max_ms,
                        "round_ms_mean", during ? sum_ms / during : 0.0);
  json_object_set_new(o, "compliance_s", from < n ? json_real(r[from].t - e.start) : json_null());
  json_object_set_new(o, "overshoot_samples", json_integer((json_int_t)after));
  json_object_set_new(o, "max_over_pct", during ? json_real(100 * max_over) : json_null());
  json_object_set_new(o, "held_tput_relative", held ? json_real(rel / held) : json_null());
  free(r);
  *ret = o;
  return 0;
}

int ctl_report_plot(struct ctl_store *st, int64_t id, const char *path, char *err, size_t errlen) {
  struct ctl_event e;
  struct ctl_round_row *r = NULL;
  size_t n = 0;
  int rc = load(st, id, &e, &r, &n, err, errlen);
  if (rc < 0) return rc;
  double *x = calloc(n + 1, sizeof *x), *tg = calloc(n + 1, sizeof *tg),
         *ms = calloc(n + 1, sizeof *ms), *rel = calloc(n + 1, sizeof *rel);
  rc = x && tg && ms && rel ? 0 : -ENOMEM;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    x[i] = r[i].t - e.start;
    tg[i] = r[i].event_id == id ? r[i].target_w / 1e3 : NAN;
    ms[i] = r[i].measured_w / 1e3;
    rel[i] = r[i].tput_uncapped > 0 ? r[i].tput / r[i].tput_uncapped : NAN;
  }
  struct pflex_plot_series power[] = {
      {"target", x, tg, n, PFLEX_PLOT_LINE, 1, PFLEX_PLOT_DASHED, 0, NULL},
      {"measured", x, ms, n, PFLEX_PLOT_LINE, 0, PFLEX_PLOT_SOLID, 0, NULL},
  };
  struct pflex_plot_series tput[] = {
      {"all jobs", x, rel, n, PFLEX_PLOT_LINE, 2, PFLEX_PLOT_SOLID, 0, NULL}};
  char title[96];
  snprintf(title, sizeof title, "event %lld", (long long)id);
  struct pflex_plot_panel panels[] = {
      {"cluster power", "s since the event's start", "kW", NAN, NAN, NAN, NAN, power, 2, true,
       PFLEX_PLOT_LEGEND_BOTTOM_RIGHT, true, NULL, 0, 0},
      {"throughput relative to uncapped", "s since the event's start", "T / T uncapped", NAN, NAN,
       0, 1.05, tput, 1, false, PFLEX_PLOT_LEGEND_TOP_LEFT, true, NULL, 0, 0},
  };
  struct pflex_plot plot = {
      .title = title, .cols = 1, .rows = 2, .panels = panels, .npanels = 2, .width_px = 800, .height_px = 700};
  if (rc == 0 && (rc = pflex_plot_render(&plot, path)) < 0)
    snprintf(err, errlen, "cannot draw '%s': %s", path, strerror(-rc));
  free(x);
  free(tg);
  free(ms);
  free(rel);
  free(r);
  return rc;
}
