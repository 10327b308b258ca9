/* pflexd's durable lease state: for every GPU pflexd holds (a lease, a
 * fallback limit, or a restore it still owes), what it holds and until when,
 * in <state_dir>/pflexd-leases.json, replaced atomically (temporary file,
 * fsync, rename, fsync of the directory) before each change it describes.
 * With the restore records this lets a restarted pflexd (after kill -9)
 * resume live leases and restore or fall back the others. */
#ifndef PFLEX_AGENT_STATE_H
#define PFLEX_AGENT_STATE_H

#include <stddef.h>

#include "agent/lease.h"

#define AGENT_STATE_FILE "pflexd-leases.json"

struct agent_state_entry {
  char uuid[96];
  unsigned index;          /* when written; GPUs are found again by UUID */
  struct agent_lease lease; /* expires_s is CLOCK_REALTIME seconds here */
};

/* Writes the entries (NONE ones are left out) to path atomically. The
 * leases' expires_s are given on the monotonic clock `mono_now` and stored as
 * wall-clock time (real_now + left), so they survive a restart. */
int agent_state_save(const char *path, const char *backend, const struct agent_state_entry *v,
                     size_t n, double mono_now, double real_now);

/* Reads path. -ENOENT when there is none (nothing held); -EINVAL with the
 * reason in errbuf for a file that is not valid (never guessed around);
 * -EXDEV when it holds GPUs of another backend. *ret is freed by the caller;
 * expires_s of HELD entries is CLOCK_REALTIME seconds. */
int agent_state_load(const char *path, const char *backend, struct agent_state_entry **ret,
                     size_t *ret_n, char *errbuf, size_t errlen);

#endif
