/* The schedule file: planned events, as JSON {"events":[{...}, ...]} whose
 * entries have exactly the fields of POST /v1/events. Read at start: each
 * event not yet over is validated like a request and added to the store
 * once (an identical scheduled event already there is not added again);
 * those already over are skipped. One bad entry refuses the whole file,
 * naming the entry and the field, and nothing is added. */
#ifndef CTL_SCHEDULE_H
#define CTL_SCHEDULE_H

#include <stddef.h>

#include "controller/events.h"
#include "controller/store.h"

/* Reads and validates the file: the events not over at now, in *ret (free()
 * it) and *ret_n. -EINVAL with err naming the file, entry and field;
 * nothing is returned then. The file must pass ctl_open_trusted (-EPERM). */
int ctl_schedule_read(const char *path, double now, struct ctl_event **ret, size_t *ret_n,
                      char *err, size_t errlen);
/* The same from fd (closed here), already checked; path names it. */
int ctl_schedule_read_fd(int fd, const char *path, double now, struct ctl_event **ret,
                         size_t *ret_n, char *err, size_t errlen);

/* Reads the file and adds to the store, in one transaction, the events it
 * holds that the store does not. The number added (>= 0), or -errno with err. */
int ctl_schedule_load(const char *path, struct ctl_store *st, double now, char *err, size_t errlen);

#endif
