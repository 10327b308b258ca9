/* The schedule file (schedule.h). */
#include "controller/schedule.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "controller/events.h"
#include "controller/inventory.h"

static bool same(const struct ctl_event *a, const struct ctl_event *b) {
  return strcmp(a->source, b->source) == 0 && fabs(a->start - b->start) < 1e-3 &&
         a->duration_s == b->duration_s && a->target_w == b->target_w && a->cut_pct == b->cut_pct &&
         a->ramp_s == b->ramp_s && a->priority == b->priority;
}

static int parse_all(json_t *arr, const char *path, double now, struct ctl_event *v, size_t *ret_n,
                     char *err, size_t errlen) {
  size_t n = 0;
  for (size_t i = 0; i < json_array_size(arr); i++) {
    json_t *o = json_array_get(arr, i);
    struct ctl_field_error fe;
    if (json_is_string(json_object_get(o, "start")) &&
        strcmp(json_string_value(json_object_get(o, "start")), "now") == 0) {
      snprintf(err, errlen,
               "'%s': events[%zu]: field 'start': a schedule needs a time, not \"now\"", path, i);
      return -EINVAL;
    }
    /* Parsed as of its own start so that an event already over is recognised, not refused. */
    if (ctl_event_from_json(o, -INFINITY, &v[n], &fe) < 0) {
      snprintf(err, errlen, "'%s': events[%zu]: field '%s': %s", path, i, fe.field, fe.message);
      return -EINVAL;
    }
    v[n].created = now;
    snprintf(v[n].source, sizeof v[n].source, "schedule");
    if (v[n].start + v[n].duration_s > now) n++;
  }
  *ret_n = n;
  return 0;
}

int ctl_schedule_read(const char *path, double now, struct ctl_event **ret, size_t *ret_n,
                      char *err, size_t errlen) {
  int fd = ctl_open_trusted(path, err, errlen);
  return fd < 0 ? fd : ctl_schedule_read_fd(fd, path, now, ret, ret_n, err, errlen);
}

int ctl_schedule_read_fd(int fd, const char *path, double now, struct ctl_event **ret,
                         size_t *ret_n, char *err, size_t errlen) {
  FILE *f = fdopen(fd, "r");
  if (!f) {
    close(fd);
    snprintf(err, errlen, "'%s': out of memory", path);
    return -ENOMEM;
  }
  json_error_t je;
  json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
  fclose(f);
  if (!root) {
    snprintf(err, errlen, "'%s': line %d: %s", path, je.line, je.text);
    return -EINVAL;
  }
  json_t *arr = json_object_get(root, "events");
  if (!json_is_array(arr) || json_object_size(root) != 1) {
    json_decref(root);
    snprintf(err, errlen, "'%s': expected {\"events\":[...]} and nothing else", path);
    return -EINVAL;
  }
  size_t n = 0;
  struct ctl_event *v = calloc(json_array_size(arr) + 1, sizeof *v);
  int rc = v ? parse_all(arr, path, now, v, &n, err, errlen) : -ENOMEM;
  json_decref(root);
  if (rc < 0) {
    if (rc == -ENOMEM) snprintf(err, errlen, "'%s': out of memory", path);
    free(v);
    return rc;
  }
  *ret = v;
  *ret_n = n;
  return 0;
}

int ctl_schedule_load(const char *path, struct ctl_store *st, double now, char *err,
                      size_t errlen) {
  size_t n = 0, nold = 0, nnew = 0;
  struct ctl_event *v = NULL, *old = NULL;
  int rc = ctl_schedule_read(path, now, &v, &n, err, errlen);
  if (rc < 0) return rc;
  rc = ctl_store_events(st, true, now, &old, &nold);
  for (size_t i = 0; rc == 0 && i < n; i++) { /* keep only the events not stored yet */
    bool known = false;
    for (size_t k = 0; k < nold && !known; k++)
      known = same(&v[i], &old[k]);
    if (!known) v[nnew++] = v[i];
  }
  if (rc < 0)
    snprintf(err, errlen, "'%s': cannot read the stored events: %s", path, ctl_store_errmsg(st));
  else if (ctl_store_events_add(st, v, nnew) < 0) {
    snprintf(err, errlen, "'%s': cannot store its events (none added): %s", path,
             ctl_store_errmsg(st));
    rc = -EIO;
  }
  free(old);
  free(v);
  return rc < 0 ? rc : (int)nnew;
}
