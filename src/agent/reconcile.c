/* Reconciliation at start (reconcile.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/caps.h"
#include "agent/reconcile.h"
#include "agent/state.h"
#include "pflex/error.h"

static int find_uuid(const struct agent *a, const char *uuid) {
  for (unsigned i = 0; i < a->n; i++)
    if (strcmp(a->g[i].info.uuid, uuid) == 0) return (int)i;
  return -1;
}

/* The lease GPU i gets from the previous instance's entry. */
static void take_over(struct agent *a, unsigned i, struct agent_lease l, double mono,
                      double real) {
  if (l.state == AGENT_LEASE_HELD) {
    double left = l.expires_s - real;
    if (left > l.lease_s) left = l.lease_s; /* the wall clock went back: never longer */
    if (left > 0)
      l.expires_s = mono + left;
    else
      agent_lease_fall_back(&l);
  }
  a->g[i].lease = l;
}

/* Sets the limit pflexd wants on GPU i; a GPU that cannot be set is restored. */
static void reapply(struct agent *a, unsigned i) {
  struct pflex_limit_change c = {.index = i, .mw = agent_lease_target_mw(&a->g[i].lease)};
  int err = pflex_restore_apply_limits(a->rs, a->gpu, &c, 1, PFLEX_APPLY_CLAMP, NULL);
  if (!err) return;
  a->c.limit_failures++;
  agent_log("error", "GPU %u: cannot re-apply %.1f W after restart: %s; restoring it", i,
            c.mw / 1000.0, pflex_strerror(err));
  a->g[i].lease = (struct agent_lease){.state = AGENT_LEASE_RESTORE};
}

static void summary(const struct agent *a, size_t restored) {
  unsigned held = 0, fb = 0, pending = 0;
  for (unsigned i = 0; i < a->n; i++) {
    held += a->g[i].lease.state == AGENT_LEASE_HELD;
    fb += a->g[i].lease.state == AGENT_LEASE_FALLBACK;
    pending += a->g[i].lease.state == AGENT_LEASE_RESTORE;
  }
  agent_log("note", "reconciled with '%s': %u lease%s resumed, %u at fallback, %zu restored%s",
            a->state_path, held, held == 1 ? "" : "s", fb, restored,
            pending ? ", some restores failed (retried)" : "");
}

int agent_reconcile(struct agent *a, char *errbuf, size_t errlen) {
  struct agent_state_entry *v = NULL;
  size_t n = 0;
  int err = agent_state_load(a->state_path, pflex_gpu_backend_name(a->gpu), &v, &n, errbuf,
                             errlen);
  if (err == -ENOENT) return 0;
  if (err) return err;
  double mono = agent_now(), real = agent_real_now();
  for (size_t k = 0; k < n; k++) {
    int i = find_uuid(a, v[k].uuid);
    if (i < 0)
      agent_log("warning", "GPU %s of the lease file is gone; its restore record stays for "
                           "'pflex cap restore'", v[k].uuid);
    else
      take_over(a, (unsigned)i, v[k].lease, mono, real);
  }
  free(v);
  struct agent_lease now[AGENT_MAX_GPUS];
  for (unsigned i = 0; i < a->n; i++)
    now[i] = a->g[i].lease;
  if ((err = agent_caps_save(a, now))) {
    snprintf(errbuf, errlen, "cannot write the lease state '%s': %s", a->state_path,
             pflex_strerror(err));
    return err;
  }
  for (unsigned i = 0; i < a->n; i++)
    if (agent_lease_target_mw(&a->g[i].lease)) reapply(a, i);
  struct agent_error e;
  json_t *done = json_array(), *failed = json_array();
  if (agent_caps_restore_marked(a, ~(uint64_t)0, done, failed, &e))
    agent_log("error", "reconcile: %s (retried)", e.message);
  size_t restored = json_array_size(done);
  json_decref(done);
  json_decref(failed);
  for (unsigned i = 0; i < a->n; i++)
    now[i] = a->g[i].lease;
  if (agent_caps_save(a, now)) agent_log("warning", "cannot update '%s'", a->state_path);
  summary(a, restored);
  return 0;
}
