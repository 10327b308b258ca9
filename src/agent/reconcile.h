/* Start-up reconciliation: what the previous pflexd held (its lease file,
 * after a crash, kill -9 or a rolling upgrade) is resumed, fallen back or
 * restored, so that no GPU stays at a limit nobody holds. */
#ifndef PFLEX_AGENT_RECONCILE_H
#define PFLEX_AGENT_RECONCILE_H

#include <stddef.h>

#include "agent/agent.h"

/* Reads the lease file and brings every GPU it names to its due state: a
 * lease with time left is resumed (cap re-applied, the rest of its time), an
 * expired one falls back (original limit, or its fallback wattage), a
 * fallback wattage is re-applied, a pending restore is done. A lease file
 * that cannot be read, or was written for another backend, is refused
 * (-EINVAL / -EXDEV, reason in errbuf): pflexd does not guess. */
int agent_reconcile(struct agent *a, char *errbuf, size_t errlen);

#endif
