/* Leases: pflexd's claim on a GPU's power limit. A cap is held for lease_s
 * seconds; without renewal it falls back, either to the GPU's original limit
 * ("default": the GPU is restored and released) or to a given wattage, which
 * is then held without a deadline until the next request. Pure bookkeeping
 * on a monotonic clock; caps.c does what it says to the GPUs. */
#ifndef PFLEX_AGENT_LEASE_H
#define PFLEX_AGENT_LEASE_H

#include <stdbool.h>
#include <stddef.h>

enum agent_lease_state {
  AGENT_LEASE_NONE = 0, /* pflexd holds nothing: the GPU is at its original limit */
  AGENT_LEASE_HELD,     /* at cap_mw until expires_s */
  AGENT_LEASE_FALLBACK, /* the lease ran out: at fallback_mw until told otherwise */
  AGENT_LEASE_RESTORE,  /* pflexd owes the GPU a restore (written before doing it) */
};

struct agent_lease {
  enum agent_lease_state state;
  unsigned cap_mw;    /* HELD: the cap applied (after clamping) */
  double expires_s;   /* HELD: the deadline, monotonic seconds */
  double lease_s;     /* HELD: the lease length last granted */
  bool fallback_default;
  unsigned fallback_mw; /* the limit applied at lease end when !fallback_default */
};

/* Holds cap_mw from now for lease_s, with the given fallback. */
void agent_lease_grant(struct agent_lease *l, unsigned cap_mw, double now, double lease_s,
                       bool fallback_default, unsigned fallback_mw);

/* Moves the deadline of every HELD lease to now + lease_s. */
void agent_lease_renew_all(struct agent_lease *v, size_t n, double now, double lease_s);

/* True when l is HELD and its deadline has passed. */
bool agent_lease_due(const struct agent_lease *l, double now);

/* Seconds left of a HELD lease (0 when due); -1 for any other state. */
double agent_lease_left(const struct agent_lease *l, double now);

/* The earliest deadline of the HELD leases, or INFINITY. */
double agent_lease_next_deadline(const struct agent_lease *v, size_t n);

/* What an expired lease becomes: NONE-to-be (RESTORE, for "default") or
 * FALLBACK at fallback_mw. */
void agent_lease_fall_back(struct agent_lease *l);

/* The limit pflexd wants on the GPU (HELD: cap, FALLBACK: fallback), or 0. */
unsigned agent_lease_target_mw(const struct agent_lease *l);

/* "none", "held", "fallback", "restore". */
const char *agent_lease_state_name(enum agent_lease_state s);

/* Parses a name of agent_lease_state_name; -EINVAL for another. */
int agent_lease_state_parse(const char *name, enum agent_lease_state *ret);

#endif
