/* The controller's state in SQLite: events, rounds, allocations and
 * compliance samples, so that a restarted controller (kill -9 included)
 * resumes an active event where it was, and `report` can tell what happened.
 * WAL journal, one transaction per round. */
#ifndef CTL_STORE_H
#define CTL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/agent_json.h"
#include "controller/events.h"

struct ctl_store;

/* What the controller needs to resume. */
struct ctl_resume {
  double offset_w;   /* the feedback term */
  double uncapped_w; /* the last uncapped baseline */
  double last_round; /* epoch of the last round, 0 if none */
  int64_t rounds;
};

struct ctl_round_row {
  double t;
  int64_t event_id; /* governing event, 0 = none */
  double target_w;  /* 0 = no event */
  double budget_w, measured_w, offset_w, caps_w;
  double tput, tput_uncapped; /* cluster throughput (sum of jobs) and its uncapped estimate */
  int compliant;              /* -1 no event, 0 over target + 1%, 1 at or under */
  int nodes, unreachable, jobs;
  double alloc_ms, round_ms;
};

struct ctl_alloc_row {
  const char *job;
  int gpus;
  double power_w, cap_w, tput, pred_tput, tput_uncapped, confidence;
  const char *cls; /* the job's class, NULL: none */
};

/* What was learnt of a job that a restarted controller keeps (jobs.h):
 * without it every job of an active event (capped, so never seen uncapped)
 * would be probed at the equal share again. */
struct ctl_learnt_row {
  char job[CTL_JOB_ID_MAX];
  double p_max, t_max, t_est, draw_ratio;
  double t_est_w; /* the draw t_est was read at (0: not known, a store of schema 2) */
};

/* One round's jobs of one class, summed (the report's per-class figure). */
struct ctl_class_row {
  double t;
  char cls[64]; /* "" : jobs without a class */
  int jobs;
  double power_w;
  double tput, tput_uncapped; /* over the jobs whose both are known; NAN: none */
};

/* Opens (creating) the store at path; -PFLEX_E_SCHEMA for a newer schema,
 * -errno, with err filled. */
int ctl_store_open(const char *path, struct ctl_store **ret, char *err, size_t errlen);
/* Opens an existing store for reading only (the report): it writes nothing,
 * migrates nothing and leaves no -wal or -shm file; a read-only store file
 * is fine. A schema other than this controller's is -PFLEX_E_SCHEMA, an
 * older one with the advice to start the controller once on it. Only the
 * read functions may be used on it. */
int ctl_store_open_readonly(const char *path, struct ctl_store **ret, char *err, size_t errlen);
void ctl_store_close(struct ctl_store *st);

/* Inserts an event and sets e->id. */
int ctl_store_event_add(struct ctl_store *st, struct ctl_event *e);
/* Adds n events in one transaction: all of them, or (-EIO) none. */
int ctl_store_events_add(struct ctl_store *st, struct ctl_event *v, size_t n);
/* Writes back an event's mutable fields (baseline_w, ended_early). */
int ctl_store_event_update(struct ctl_store *st, const struct ctl_event *e);
/* Events not yet done at time now (or all with all = true), oldest first;
 * *ret freed with free(). */
int ctl_store_events(struct ctl_store *st, bool all, double now, struct ctl_event **ret,
                     size_t *ret_n);
/* One event by id: -ENOENT when there is none. */
int ctl_store_event_get(struct ctl_store *st, int64_t id, struct ctl_event *ret);

/* What a round writes, all in one transaction: the round, its allocations
 * (nalloc, may be 0), the resumable state (NULL: unchanged), and of the
 * learnt table only what changed: rows of jobs whose values moved (upserted)
 * and the ids of jobs the controller forgot (deleted). */
struct ctl_round_write {
  const struct ctl_round_row *round;
  const struct ctl_alloc_row *alloc;
  size_t nalloc;
  const struct ctl_resume *resume;
  const struct ctl_learnt_row *learnt;
  size_t nlearnt;
  const char (*gone)[CTL_JOB_ID_MAX];
  size_t ngone;
};

/* Writes a round: all of it, or (-EIO) none. */
int ctl_store_round(struct ctl_store *st, const struct ctl_round_write *w);
/* The resumable state a round last wrote. */
int ctl_store_resume_get(struct ctl_store *st, struct ctl_resume *ret);

/* Rounds of an event between from and to (epoch), in order, for `report`:
 * *ret freed with free(). */
int ctl_store_rounds(struct ctl_store *st, double from, double to, struct ctl_round_row **ret,
                     size_t *ret_n);

/* Every learnt row; *ret freed with free(). -EIO, -ENOMEM. */
int ctl_store_learnt_get(struct ctl_store *st, struct ctl_learnt_row **ret, size_t *ret_n);

/* Per round and class between from and to, in order of time then class;
 * *ret freed with free(). -EIO, -ENOMEM. */
int ctl_store_class_rounds(struct ctl_store *st, double from, double to,
                           struct ctl_class_row **ret, size_t *ret_n);

const char *ctl_store_errmsg(struct ctl_store *st);

#endif
