/* `pflex-controller report EVENT` (report.h). */
#include "controller/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/controller.h"
#include "pflex/plot.h"

#define MARGIN_S 30.0
#define MAX_CLASSES 11 /* drawn in the palette's colours 1..11; more share the last */

struct report_data {
  struct ctl_event e;
  struct ctl_round_row *r;
  size_t n;
  struct ctl_class_row *c; /* per round and class */
  size_t nc;
};

static void data_release(struct report_data *d) {
  free(d->r);
  free(d->c);
  memset(d, 0, sizeof *d);
}

static int load(struct ctl_store *st, int64_t id, struct report_data *d, char *err,
                size_t errlen) {
  memset(d, 0, sizeof *d);
  int rc = ctl_store_event_get(st, id, &d->e);
  if (rc < 0) {
    snprintf(err, errlen, "no event %lld in the store", (long long)id);
    return rc;
  }
  double from = d->e.start - MARGIN_S, to = ctl_event_end(&d->e) + d->e.ramp_s + MARGIN_S;
  rc = ctl_store_rounds(st, from, to, &d->r, &d->n);
  if (rc == 0) rc = ctl_store_class_rounds(st, from, to, &d->c, &d->nc);
  if (rc < 0) {
    snprintf(err, errlen, "cannot read the rounds: %s", ctl_store_errmsg(st));
    data_release(d);
  }
  return rc;
}

/* Whether round r is one of event e's: e set its target, or another event
 * with a lower level did while e was in force (overlapping events: the
 * lowest wins, so a round compliant with it is compliant with e too). */
static bool in_force(const struct ctl_event *e, const struct ctl_round_row *r) {
  double level;
  return r->event_id == e->id || (r->event_id != 0 && ctl_event_level(e, r->t, &level));
}

/* Index of the first round from which every round of the event is compliant. */
static size_t compliance_from(const struct ctl_round_row *r, size_t n, const struct ctl_event *e) {
  size_t from = n;
  for (size_t i = n; i-- > 0;) {
    if (!in_force(e, &r[i])) continue;
    if (r[i].compliant != 1) break;
    from = i;
  }
  return from;
}

/* The held part: from the end of the ramp to the end of the event. */
static bool held(const struct ctl_event *e, double t) {
  return t >= e->start + e->ramp_s && t < ctl_event_end(e);
}

/* The classes the rounds name, in order of first appearance ("" : none). */
static size_t class_names(const struct report_data *d, char names[][64], size_t max) {
  size_t k = 0;
  for (size_t i = 0; i < d->nc; i++) {
    size_t j = 0;
    while (j < k && strcmp(names[j], d->c[i].cls) != 0)
      j++;
    if (j == k && k < max) snprintf(names[k++], 64, "%s", d->c[i].cls);
  }
  return k;
}

/* Per class over the held part: the mean throughput relative to uncapped,
 * the mean power drawn, the most jobs in a round. */
static json_t *classes_json(const struct report_data *d) {
  char names[MAX_CLASSES][64];
  size_t k = class_names(d, names, MAX_CLASSES);
  json_t *a = json_array();
  for (size_t j = 0; j < k; j++) {
    double rel = 0, power = 0;
    size_t nrel = 0, npow = 0;
    int most = 0;
    for (size_t i = 0; i < d->nc; i++) {
      const struct ctl_class_row *c = &d->c[i];
      if (strcmp(c->cls, names[j]) != 0 || !held(&d->e, c->t)) continue;
      power += c->power_w;
      npow++;
      most = c->jobs > most ? c->jobs : most;
      if (isfinite(c->tput) && c->tput_uncapped > 0) {
        rel += c->tput / c->tput_uncapped;
        nrel++;
      }
    }
    json_array_append_new(
        a, json_pack("{s:o, s:i, s:o, s:o}", "class",
                     names[j][0] ? json_string(names[j]) : json_null(), "jobs_max", most,
                     "power_w_mean", npow ? json_real(power / npow) : json_null(),
                     "held_tput_relative", nrel ? json_real(rel / nrel) : json_null()));
  }
  return a;
}

int ctl_report_json(struct ctl_store *st, int64_t id, json_t **ret, char *err, size_t errlen) {
  struct report_data d;
  int rc = load(st, id, &d, err, errlen);
  if (rc < 0) return rc;
  const struct ctl_round_row *r = d.r;
  size_t n = d.n, during = 0, over = 0, unreachable = 0, nheld = 0,
         from = compliance_from(r, n, &d.e), governing = 0;
  double max_ms = 0, sum_ms = 0, rel = 0, max_over = 0;
  for (size_t i = 0; i < n; i++) {
    if (!in_force(&d.e, &r[i])) continue;
    during++;
    governing += r[i].event_id == id;
    over += r[i].compliant == 0;
    unreachable += r[i].unreachable > 0;
    max_ms = fmax(max_ms, r[i].round_ms);
    sum_ms += r[i].round_ms;
    max_over = fmax(max_over, (r[i].measured_w - r[i].target_w) / r[i].target_w);
    if (held(&d.e, r[i].t) && r[i].tput_uncapped > 0) {
      rel += r[i].tput / r[i].tput_uncapped;
      nheld++;
    }
  }
  size_t after = 0;
  double worst_after = -INFINITY; /* like sim-cluster's max_over_pct: may be below 0 */
  for (size_t i = from; i < n; i++) {
    if (!in_force(&d.e, &r[i])) continue;
    after += r[i].compliant == 0;
    worst_after = fmax(worst_after, (r[i].measured_w - r[i].target_w) / r[i].target_w);
  }
  /* The event's state as of now: "ended" once it is over. */
  json_t *o = json_pack("{s:o, s:I, s:I, s:I, s:f, s:f}", "event",
                        ctl_event_to_json(&d.e, ctl_epoch_now()),
                        "rounds", (json_int_t)during, "rounds_over", (json_int_t)over,
                        "rounds_with_unreachable", (json_int_t)unreachable, "round_ms_max", max_ms,
                        "round_ms_mean", during ? sum_ms / during : 0.0);
  json_object_set_new(o, "rounds_governing", json_integer((json_int_t)governing));
  json_object_set_new(o, "compliance_s", from < n ? json_real(r[from].t - d.e.start) : json_null());
  json_object_set_new(o, "overshoot_samples", json_integer((json_int_t)after));
  json_object_set_new(o, "max_over_pct", during ? json_real(100 * max_over) : json_null());
  json_object_set_new(o, "max_over_pct_after_compliance",
                      from < n ? json_real(100 * worst_after) : json_null());
  json_object_set_new(o, "held_tput_relative", nheld ? json_real(rel / nheld) : json_null());
  json_object_set_new(o, "classes", classes_json(&d));
  data_release(&d);
  *ret = o;
  return 0;
}

/* The figure's series: 0 target, 1 measured, 2 all jobs' throughput, then
 * per class its throughput (3 + 2j) and power (4 + 2j), on one time axis. */
struct timeline {
  size_t n, nclasses;
  double *x;
  double *y[3 + 2 * MAX_CLASSES];
  char names[MAX_CLASSES][64];
  char labels[MAX_CLASSES][72];
};

static void timeline_release(struct timeline *tl) {
  free(tl->x);
  for (size_t i = 0; i < 3 + 2 * MAX_CLASSES; i++)
    free(tl->y[i]);
}

static int timeline_fill(const struct report_data *d, int64_t id, struct timeline *tl) {
  memset(tl, 0, sizeof *tl);
  tl->n = d->n;
  tl->nclasses = class_names(d, tl->names, MAX_CLASSES);
  tl->x = calloc(d->n + 1, sizeof *tl->x);
  int rc = tl->x ? 0 : -ENOMEM;
  for (size_t s = 0; rc == 0 && s < 3 + 2 * tl->nclasses; s++) {
    tl->y[s] = malloc((d->n + 1) * sizeof *tl->y[s]);
    for (size_t i = 0; tl->y[s] && i < d->n; i++)
      tl->y[s][i] = NAN; /* a round without jobs of a class draws no point */
    if (!tl->y[s]) rc = -ENOMEM;
  }
  for (size_t i = 0, c = 0; rc == 0 && i < d->n; i++) {
    const struct ctl_round_row *r = &d->r[i];
    tl->x[i] = r->t - d->e.start;
    tl->y[0][i] = in_force(&d->e, r) ? r->target_w / 1e3 : NAN;
    tl->y[1][i] = r->measured_w / 1e3;
    tl->y[2][i] = r->tput_uncapped > 0 ? r->tput / r->tput_uncapped : NAN;
    while (c < d->nc && d->c[c].t < r->t)
      c++;
    for (; c < d->nc && d->c[c].t == r->t; c++) {
      size_t j = 0;
      while (j < tl->nclasses && strcmp(tl->names[j], d->c[c].cls) != 0)
        j++;
      if (j == tl->nclasses) continue; /* past MAX_CLASSES */
      const struct ctl_class_row *cr = &d->c[c];
      tl->y[3 + 2 * j][i] = cr->tput_uncapped > 0 ? cr->tput / cr->tput_uncapped : NAN;
      tl->y[4 + 2 * j][i] = cr->power_w / 1e3;
    }
  }
  for (size_t j = 0; j < tl->nclasses; j++)
    snprintf(tl->labels[j], sizeof tl->labels[j], "%s", tl->names[j][0] ? tl->names[j] : "no class");
  if (rc < 0) timeline_release(tl);
  return rc;
}

static int draw(const struct timeline *tl, int64_t id, const char *path) {
  size_t n = tl->n, k = tl->nclasses;
  struct pflex_plot_series power[2] = {
      {"target", tl->x, tl->y[0], n, PFLEX_PLOT_LINE, 1, PFLEX_PLOT_DASHED, 0, NULL},
      {"measured", tl->x, tl->y[1], n, PFLEX_PLOT_LINE, 0, PFLEX_PLOT_SOLID, 0, NULL},
  };
  struct pflex_plot_series tput[1 + MAX_CLASSES], cpow[MAX_CLASSES];
  tput[0] = (struct pflex_plot_series){"all jobs", tl->x, tl->y[2], n, PFLEX_PLOT_LINE, 12,
                                       PFLEX_PLOT_SOLID, 2, NULL};
  for (size_t j = 0; j < k; j++) {
    int color = (int)(j % 10) + 2;
    tput[1 + j] = (struct pflex_plot_series){tl->labels[j], tl->x, tl->y[3 + 2 * j], n,
                                             PFLEX_PLOT_LINE, color, PFLEX_PLOT_SOLID, 0, NULL};
    cpow[j] = (struct pflex_plot_series){tl->labels[j], tl->x, tl->y[4 + 2 * j], n,
                                         PFLEX_PLOT_LINE, color, PFLEX_PLOT_SOLID, 0, NULL};
  }
  char title[96];
  snprintf(title, sizeof title, "event %lld", (long long)id);
  /* One time axis for every panel (the per-class rows exist only while the
   * event allocates), its label under the last. */
  double x0 = n ? tl->x[0] : NAN, x1 = n ? tl->x[n - 1] : NAN;
  const char *xl = "s since the event's start";
  struct pflex_plot_panel panels[3] = {
      {"cluster power", "", "kW", x0, x1, NAN, NAN, power, 2, true,
       PFLEX_PLOT_LEGEND_OUTSIDE_RIGHT, true, NULL, 0, 0},
      {"throughput relative to uncapped, by job class", k ? "" : xl, "T / T uncapped", x0, x1,
       NAN, NAN, tput, 1 + k, true, PFLEX_PLOT_LEGEND_OUTSIDE_RIGHT, true, NULL, 0, 0},
      {"power drawn, by job class", xl, "kW", x0, x1, 0, NAN, cpow, k, true,
       PFLEX_PLOT_LEGEND_OUTSIDE_RIGHT, true, NULL, 0, 0},
  };
  struct pflex_plot plot = {.title = title, .cols = 1, .rows = k ? 3 : 2, .panels = panels,
                            .npanels = k ? 3 : 2, .width_px = 960, .height_px = k ? 1000 : 700,
                            .note = "power: the agents' readings; throughput: what the jobs "
                                    "report, over their uncapped estimate",
                            .legend_width = 0.2};
  return pflex_plot_render(&plot, path);
}

int ctl_report_plot(struct ctl_store *st, int64_t id, const char *path, char *err, size_t errlen) {
  struct report_data d;
  int rc = load(st, id, &d, err, errlen);
  if (rc < 0) return rc;
  struct timeline tl;
  rc = timeline_fill(&d, id, &tl);
  if (rc == 0) {
    rc = draw(&tl, id, path);
    timeline_release(&tl);
  }
  if (rc < 0) snprintf(err, errlen, "cannot draw '%s': %s", path, strerror(-rc));
  data_release(&d);
  return rc;
}
