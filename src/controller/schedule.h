/* The schedule file: planned events, as JSON {"events":[{...}, ...]} whose
 * entries have exactly the fields of POST /v1/events. Read at start: each
 * event not yet over is validated like a request and added to the store
 * once (an identical scheduled event already there is not added again);
 * those already over are skipped. One bad entry refuses the whole file,
 * naming the entry and the field, and nothing is added. */
#ifndef CTL_SCHEDULE_H
#define CTL_SCHEDULE_H

#include <stddef.h>

#include "controller/store.h"

int ctl_schedule_load(const char *path, struct ctl_store *st, double now, char *err, size_t errlen);

#endif
