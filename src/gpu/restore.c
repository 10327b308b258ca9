/* Durable restore records (include/pflex/restore.h, file format in docs/gpu.md).
 *
 * Every read-modify-write of restore.json holds an exclusive flock on
 * restore.lock in the same directory, and every write is: temporary file,
 * fsync, rename, fsync of the directory (restore_file.c; the lock and the
 * directory: restore_store.c). A limit is changed
 * only after that sequence returned success (apply_limits.c), so a crash at
 * any point leaves either no change or a change with its record on disk. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpu/backends.h" /* pflex__gpu_set_limit_unrecorded */
#include "gpu/restore_internal.h"
#include "gpu/trusted_dir.h"
#include "pflex/error.h"
#include "pflex/gpu.h"
#include "pflex/restore.h"


int pflex_restore_list(struct pflex_restore *r, struct pflex_restore_record **ret_records,
                       size_t *ret_n) {
  int lock;
  int err = pflex__restore_lock(r, false, &lock);
  if (err) return err;
  struct pflex__recset s;
  err = pflex__recset_load(r, &s);
  pflex__restore_unlock(lock);
  if (err) return err;
  struct pflex_restore_record *v = malloc((s.n ? s.n : 1) * sizeof *v);
  if (!v) {
    pflex__recset_release(&s);
    return -ENOMEM;
  }
  if (s.n) memcpy(v, s.v, s.n * sizeof *v);
  *ret_records = v;
  *ret_n = s.n;
  pflex__recset_release(&s);
  return 0;
}

int pflex_restore_record(struct pflex_restore *r, struct pflex_gpu *gpu, unsigned index) {
  unsigned mw;
  int err = pflex_gpu_get_limit(gpu, index, &mw);
  if (err) return err;
  /* Setting the limit it has: records it (if new) and changes nothing. */
  return pflex_restore_set_limit(r, gpu, index, mw);
}

int pflex_restore_set_limit(struct pflex_restore *r, struct pflex_gpu *gpu, unsigned index,
                            unsigned mw) {
  struct pflex_limit_change c = {.index = index, .mw = mw};
  return pflex_restore_apply_limits(r, gpu, &c, 1, 0, NULL);
}

/* ---- restoring ---- */

/* The current index of the GPU with this UUID, or -ENODEV. */
static int locate(struct pflex_gpu *gpu, const char *uuid, unsigned *ret_index) {
  unsigned n;
  int err = pflex_gpu_count(gpu, &n);
  if (err) return err;
  int first_err = 0;
  for (unsigned i = 0; i < n; i++) {
    struct pflex_gpu_info info;
    err = pflex_gpu_info(gpu, i, &info);
    if (err) {
      if (!first_err) first_err = err;
      continue;
    }
    if (strcmp(info.uuid, uuid) == 0) {
      *ret_index = i;
      return 0;
    }
  }
  /* A GPU we could not identify may be the one: report its error, not absence. */
  return first_err ? first_err : -ENODEV;
}

static bool listed(const unsigned *only, size_t nonly, unsigned i) {
  for (size_t k = 0; k < nonly; k++)
    if (only[k] == i) return true;
  return false;
}

/* Whether a malformed record concerns this restore: its backend (when
 * readable) is this one and, with `only`, its GPU is selected or unknown. */
static bool malformed_selected(struct pflex_gpu *gpu, json_t *raw, const unsigned *only,
                               size_t nonly) {
  json_t *b = json_object_get(raw, "backend"), *u = json_object_get(raw, "uuid");
  if (json_is_string(b) && strcmp(json_string_value(b), pflex_gpu_backend_name(gpu)) != 0)
    return false;
  unsigned at;
  if (!nonly || !json_is_string(u) || locate(gpu, json_string_value(u), &at) != 0) return true;
  return listed(only, nonly, at);
}

/* Restores one valid record; x->err says how it went. */
static void restore_one(struct pflex_restore *r, struct pflex_gpu *gpu, unsigned flags,
                        int located, unsigned idx, struct pflex_restore_result *x) {
  const struct pflex_restore_record *rec = &x->record;
  int e = located;
  /* A running sweep restores its own GPUs; restoring them under it would
   * corrupt its runs. --force still does (e.g. a hung sweep). */
  if (!e && !(flags & PFLEX_RESTORE_FORCE) && pflex__restore_held_by_other(r, rec))
    e = -PFLEX_E_HELD;
  if (!e) {
    x->found = 1;
    x->index = idx;
    e = pflex_gpu_get_limit(gpu, idx, &x->was_mw);
    /* Neither the original nor what pflex last set: someone else changed
     * it since (an operator, a facility's emergency cap). Leave it. */
    if (!e && !(flags & PFLEX_RESTORE_FORCE) && rec->set_mw && x->was_mw != rec->original_mw &&
        x->was_mw != rec->set_mw && x->was_mw != rec->prev_set_mw) {
      x->changed = 1;
      e = -EBUSY;
    }
    if (!e && x->was_mw != rec->original_mw)
      e = pflex__gpu_set_limit_unrecorded(gpu, idx, rec->original_mw);
    /* Trust the device, not the call: read back what it now enforces. */
    unsigned now_mw;
    if (!e) e = pflex_gpu_get_limit(gpu, idx, &now_mw);
    if (!e && now_mw != rec->original_mw) e = -EIO;
    if (!e) x->restored = 1;
  }
  x->err = e;
}

int pflex_restore_apply(struct pflex_restore *r, struct pflex_gpu *gpu, const unsigned *only,
                        size_t nonly, unsigned flags, struct pflex_restore_result **ret_results,
                        size_t *ret_n) {
  int lock;
  int err = pflex__restore_lock(r, true, &lock);
  if (err) return err;
  struct pflex__recset s;
  err = pflex__recset_load(r, &s);
  if (err) {
    pflex__restore_unlock(lock);
    return err;
  }
  struct pflex_restore_result *res = calloc(s.n ? s.n : 1, sizeof *res);
  bool *clear = calloc(s.n ? s.n : 1, sizeof *clear);
  if (!res || !clear) {
    free(res);
    free(clear);
    pflex__recset_release(&s);
    pflex__restore_unlock(lock);
    return -ENOMEM;
  }
  const char *backend = pflex_gpu_backend_name(gpu);
  size_t nres = 0, ncleared = 0;
  int first_err = 0;
  for (size_t i = 0; i < s.n; i++) {
    struct pflex_restore_result *x = &res[nres];
    if (s.v[i].problem[0]) { /* malformed: reported, kept, never used */
      if (!malformed_selected(gpu, s.raw[i], only, nonly)) continue;
      x->record = s.v[i];
      x->err = -PFLEX_E_PARSE;
    } else {
      if (strcmp(s.v[i].backend, backend) != 0) continue;
      unsigned idx = 0;
      int e = locate(gpu, s.v[i].uuid, &idx);
      /* A GPU that cannot be identified now is judged by its recorded index,
       * so that a caller restoring "its" GPUs hears about the failure. */
      if (nonly && !listed(only, nonly, e ? s.v[i].index : idx)) continue;
      x->record = s.v[i];
      restore_one(r, gpu, flags, e, idx, x);
    }
    nres++;
    if (x->err && !first_err) first_err = x->err;
    if (!x->err) clear[i] = true, ncleared++;
  }
  for (size_t i = s.n; i-- > 0;)
    if (clear[i]) pflex__recset_remove(&s, i);
  free(clear);
  if (ncleared) {
    err = pflex__recset_store(r, &s);
    /* The limits are back but the records stay: say so for each. */
    for (size_t k = 0; err && k < nres; k++)
      if (!res[k].err) res[k].err = err;
  }
  if (!err) err = first_err;
  *ret_results = res;
  *ret_n = nres;
  pflex__recset_release(&s);
  pflex__restore_unlock(lock);
  return err;
}
