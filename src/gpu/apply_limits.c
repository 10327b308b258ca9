/* The all-or-nothing limit change (pflex_restore_apply_limits in
 * include/pflex/restore.h): check every GPU, record every original in one
 * durable write, set each, and on any failure put back what was changed and
 * take back the records this call made. Termination signals are blocked from
 * the first write to the last, so a SIGTERM cannot leave half a set. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu/backends.h" /* pflex__gpu_set_limit_unrecorded */
#include "gpu/restore_internal.h"
#include "pflex/error.h"
#include "pflex/gpu.h"
#include "pflex/restore.h"

/* Per GPU: its identity and its record before this call. */
struct plan {
  struct pflex_gpu_info info;
  long at;      /* its record in the set, or -1 before noting */
  bool created; /* the record is this call's */
  struct pflex_restore_record saved;
  bool touched; /* a set was attempted */
};

/* Checks one GPU and fills before/applied/clamped; changes nothing. */
static int check_one(struct pflex_restore *r, struct pflex_gpu *gpu, const struct pflex__recset *s,
                     struct pflex_limit_change *c, unsigned flags, struct plan *p) {
  int err = pflex_gpu_info(gpu, c->index, &p->info);
  if (err) return err;
  if (!p->info.uuid[0]) return -PFLEX_E_RESTORE; /* cannot find it again without an identity */
  /* A malformed record may hold this GPU's true original: a new record would
   * store the capped limit as "original". */
  if (pflex__recset_blocking(s, p->info.uuid)) return -PFLEX_E_PARSE;
  p->at = pflex__recset_find(s, pflex_gpu_backend_name(gpu), p->info.uuid);
  if (p->at >= 0 && pflex__restore_held_by_other(r, &s->v[p->at])) return -PFLEX_E_HELD;
  unsigned lo, hi;
  err = pflex_gpu_constraints(gpu, c->index, &lo, &hi, NULL);
  if (!err) err = pflex_gpu_get_limit(gpu, c->index, &c->before_mw);
  if (err) return err;
  c->clamped = pflex_gpu_limit_fit(c->mw, lo, hi, &c->applied_mw) != PFLEX_LIMIT_INSIDE;
  if (c->clamped && !(flags & PFLEX_APPLY_CLAMP)) {
    c->applied_mw = c->mw;
    c->clamped = false;
    return -ERANGE;
  }
  return 0;
}

/* Notes the change in the records (the original when new, the limit pflex
 * is about to set); *dirty is set when something is to be written. */
static int note_one(struct pflex_restore *r, struct pflex_gpu *gpu, struct pflex__recset *s,
                    const struct pflex_limit_change *c, struct plan *p, bool *dirty) {
  if (p->at < 0) {
    long at = pflex__recset_add(s);
    if (at < 0) return (int)at;
    struct pflex_restore_record *v = &s->v[at];
    snprintf(v->backend, sizeof v->backend, "%s", pflex_gpu_backend_name(gpu));
    snprintf(v->uuid, sizeof v->uuid, "%s", p->info.uuid);
    snprintf(v->pci_bus_id, sizeof v->pci_bus_id, "%s", p->info.pci_bus_id);
    v->index = c->index;
    v->original_mw = c->before_mw;
    v->pid = (long long)getpid();
    v->time = (long long)time(NULL);
    p->at = at;
    p->created = true;
  }
  struct pflex_restore_record *v = &s->v[p->at];
  p->saved = *v;
  /* The one before stays known too: a crash between this note and the
   * change leaves the GPU at it, and that is still pflex's own limit. */
  if (v->set_mw != c->applied_mw) {
    if (v->set_mw) v->prev_set_mw = v->set_mw;
    v->set_mw = c->applied_mw;
  }
  if (r->holder_fd >= 0) snprintf(v->holder, sizeof v->holder, "%s", r->holder);
  if (p->created || memcmp(&p->saved, v, sizeof *v) != 0) *dirty = true;
  return 0;
}

/* Sets one GPU and reads it back: trust the device, not the call. */
static int set_one(struct pflex_restore *r, struct pflex_gpu *gpu,
                   const struct pflex_limit_change *c, struct plan *p) {
  p->touched = true;
  int err = pflex__restore_fault(r, PFLEX_RESTORE_STEP_SET_LIMIT);
  if (err) return err;
  if (c->applied_mw != c->before_mw) err = pflex__gpu_set_limit_unrecorded(gpu, c->index, c->applied_mw);
  unsigned now_mw;
  if (!err) err = pflex_gpu_get_limit(gpu, c->index, &now_mw);
  if (!err && now_mw != c->applied_mw) err = -EIO;
  return err;
}

/* Puts back every GPU a set was attempted on and takes back the notes of
 * those put back; a GPU that cannot be put back keeps its record. */
static void roll_back(struct pflex_restore *r, struct pflex_gpu *gpu, struct pflex__recset *s,
                      struct pflex_limit_change *changes, struct plan *plans, size_t n) {
  for (size_t k = 0; k < n; k++) {
    if (!plans[k].touched) continue;
    unsigned now_mw;
    int err = pflex_gpu_get_limit(gpu, changes[k].index, &now_mw);
    if (!err && now_mw != changes[k].before_mw)
      err = pflex__gpu_set_limit_unrecorded(gpu, changes[k].index, changes[k].before_mw);
    if (!err) err = pflex_gpu_get_limit(gpu, changes[k].index, &now_mw);
    changes[k].left = err || now_mw != changes[k].before_mw;
  }
  /* Records this call created are the newest, at the end: remove from the back. */
  for (size_t k = n; k-- > 0;) {
    struct plan *p = &plans[k];
    if (p->at < 0 || changes[k].left) continue;
    if (!p->created) s->v[p->at] = p->saved;
  }
  for (size_t i = s->n; i-- > 0;)
    for (size_t k = 0; k < n; k++)
      if (plans[k].created && plans[k].at == (long)i && !changes[k].left) {
        pflex__recset_remove(s, i);
        break;
      }
  pflex__recset_store(r, s); /* best effort: a note left behind only names pflex's own limit */
}

/* The part under the lock with the signals held. */
static int apply_locked(struct pflex_restore *r, struct pflex_gpu *gpu,
                        struct pflex_limit_change *changes, size_t n, unsigned flags,
                        struct plan *plans, size_t *failed) {
  struct pflex__recset s;
  int err = pflex__recset_load(r, &s);
  if (err) return err;
  for (size_t k = 0; !err && k < n; k++) {
    plans[k].at = -1;
    err = check_one(r, gpu, &s, &changes[k], flags, &plans[k]);
    if (err) *failed = k;
  }
  if (err || (flags & PFLEX_APPLY_DRY_RUN)) goto out;
  err = pflex__restore_hold(r);
  bool dirty = false;
  for (size_t k = 0; !err && k < n; k++)
    err = note_one(r, gpu, &s, &changes[k], &plans[k], &dirty);
  /* Every original is durable before the first change. */
  if (!err && dirty) err = pflex__recset_store(r, &s);
  if (err) goto out;
  for (size_t k = 0; k < n; k++) {
    err = set_one(r, gpu, &changes[k], &plans[k]);
    if (err) {
      *failed = k;
      roll_back(r, gpu, &s, changes, plans, n);
      break;
    }
  }
out:
  pflex__recset_release(&s);
  return err;
}

int pflex_restore_apply_limits(struct pflex_restore *rs, struct pflex_gpu *gpu,
                               struct pflex_limit_change *changes, size_t n, unsigned flags,
                               size_t *ret_failed) {
  size_t failed_ignored;
  size_t *failed = ret_failed ? ret_failed : &failed_ignored;
  *failed = n;
  for (size_t k = 0; k < n; k++) {
    changes[k].before_mw = changes[k].applied_mw = 0;
    changes[k].clamped = changes[k].left = false;
    for (size_t j = 0; j < k; j++)
      if (changes[j].index == changes[k].index) {
        *failed = k;
        return -EINVAL;
      }
  }
  if (n == 0) return 0;
  struct plan *plans = calloc(n, sizeof *plans);
  if (!plans) return -ENOMEM;
  int lock;
  int err = pflex__restore_lock(rs, true, &lock);
  if (err) {
    free(plans);
    return err;
  }
  /* Nothing changes before the lock is ours, so the wait for it may still
   * be interrupted; from here on a termination signal waits until the set is
   * complete or undone. */
  sigset_t hold, saved;
  sigemptyset(&hold);
  sigaddset(&hold, SIGTERM);
  sigaddset(&hold, SIGINT);
  sigaddset(&hold, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &hold, &saved);
  err = apply_locked(rs, gpu, changes, n, flags, plans, failed);
  pflex__restore_unlock(lock);
  pthread_sigmask(SIG_SETMASK, &saved, NULL);
  free(plans);
  return err;
}
