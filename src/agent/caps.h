/* Caps with leases on the GPUs of one agent: apply a request all-or-nothing
 * (lease state written first), release GPUs back to their original limits,
 * move expired leases to their fallback. Every function leaves the GPUs, the
 * in-memory leases and the lease file agreeing, or says which GPU does not. */
#ifndef PFLEX_AGENT_CAPS_H
#define PFLEX_AGENT_CAPS_H

#include <stdint.h>

#include <jansson.h>

#include "agent/agent.h"
#include "agent/body.h"

/* Applies the request's caps (clamped into each GPU's range) with its lease
 * and fallback, and renews every other lease of the node to the same lease.
 * 0 and *ret (the applied caps); or -EINVAL with e filled (422 unknown job,
 * 500 lease state not writable, 503 a GPU failed): nothing applied. */
int agent_caps_put(struct agent *a, const struct agent_caps_req *r, json_t **ret,
                   struct agent_error *e);

/* Brings the GPUs of `mask` that pflexd holds back to their original
 * limits. *ret says what happened to each; 0 when all were restored, else
 * -EIO with e (500) naming the first that was not (its record is kept). */
int agent_caps_release(struct agent *a, uint64_t mask, json_t **ret, struct agent_error *e);

/* The GPUs of a job that ended (DELETE /v1/jobs/{id}): those under a lease
 * with a wattage fallback (held, or fallen back) go to that fallback, the
 * event-safe cap, and stay there until the next request; the others go back
 * to their original limits (agent_caps_release). *ret as
 * agent_caps_release's plus "fallback": [{"gpu", "limit_w"}]. On a failure
 * to reach the fallback: -EINVAL with e, nothing changed. */
int agent_caps_release_job(struct agent *a, uint64_t mask, json_t **ret, struct agent_error *e);

/* Moves every lease that ran out by `now` to its fallback. Returns the
 * number of GPUs moved. */
unsigned agent_caps_expire(struct agent *a, double now);

/* Writes the lease file for the leases v (one per GPU). */
int agent_caps_save(struct agent *a, const struct agent_lease *v);

/* Restores the GPUs of `mask` whose lease state is RESTORE (already on
 * disk): each becomes NONE unless its restore failed (then it stays RESTORE,
 * retried by agent_caps_expire). Appends to the done and failed lists. */
int agent_caps_restore_marked(struct agent *a, uint64_t mask, json_t *done, json_t *failed,
                              struct agent_error *e);

/* CLOCK_REALTIME seconds (the lease file's clock). */
double agent_real_now(void);

/* Bitmask of the GPUs whose lease state is not NONE. */
uint64_t agent_caps_held(const struct agent *a);

#endif
