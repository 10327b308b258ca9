/* Lease bookkeeping (lease.h). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "agent/lease.h"

void agent_lease_grant(struct agent_lease *l, unsigned cap_mw, double now, double lease_s,
                       bool fallback_default, unsigned fallback_mw) {
  *l = (struct agent_lease){.state = AGENT_LEASE_HELD,
                            .cap_mw = cap_mw,
                            .expires_s = now + lease_s,
                            .lease_s = lease_s,
                            .fallback_default = fallback_default,
                            .fallback_mw = fallback_default ? 0 : fallback_mw};
}

void agent_lease_renew_all(struct agent_lease *v, size_t n, double now, double lease_s) {
  for (size_t i = 0; i < n; i++)
    if (v[i].state == AGENT_LEASE_HELD) {
      v[i].expires_s = now + lease_s;
      v[i].lease_s = lease_s;
    }
}

bool agent_lease_due(const struct agent_lease *l, double now) {
  return l->state == AGENT_LEASE_HELD && now >= l->expires_s;
}

double agent_lease_left(const struct agent_lease *l, double now) {
  if (l->state != AGENT_LEASE_HELD) return -1;
  return l->expires_s > now ? l->expires_s - now : 0;
}

double agent_lease_next_deadline(const struct agent_lease *v, size_t n) {
  double t = INFINITY;
  for (size_t i = 0; i < n; i++)
    if (v[i].state == AGENT_LEASE_HELD && v[i].expires_s < t) t = v[i].expires_s;
  return t;
}

void agent_lease_fall_back(struct agent_lease *l) {
  if (l->state != AGENT_LEASE_HELD) return;
  if (l->fallback_default) {
    l->state = AGENT_LEASE_RESTORE;
    l->cap_mw = 0;
  } else {
    l->state = AGENT_LEASE_FALLBACK;
    l->cap_mw = 0;
  }
  l->expires_s = 0;
}

unsigned agent_lease_target_mw(const struct agent_lease *l) {
  switch (l->state) {
  case AGENT_LEASE_HELD: return l->cap_mw;
  case AGENT_LEASE_FALLBACK: return l->fallback_mw;
  default: return 0;
  }
}

static const char *const state_names[] = {"none", "held", "fallback", "restore"};

const char *agent_lease_state_name(enum agent_lease_state s) {
  return (unsigned)s < sizeof state_names / sizeof state_names[0] ? state_names[s] : "?";
}

int agent_lease_state_parse(const char *name, enum agent_lease_state *ret) {
  for (size_t i = 0; i < sizeof state_names / sizeof state_names[0]; i++)
    if (strcmp(name, state_names[i]) == 0) {
      *ret = (enum agent_lease_state)i;
      return 0;
    }
  return -EINVAL;
}
