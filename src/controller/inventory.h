/* The agents the controller drives: a file of agent URLs, and the secret
 * files (bearer tokens) it reads. */
#ifndef CTL_INVENTORY_H
#define CTL_INVENTORY_H

#include <stddef.h>

#define CTL_URL_MAX 256
#define CTL_TOKEN_MAX 512
#define CTL_MAX_AGENTS 100000

struct ctl_inventory {
  char (*urls)[CTL_URL_MAX];
  size_t n;
};

/* Reads the agents file: one URL (http://HOST:PORT or https://...) per line;
 * blank lines and lines starting with '#' are skipped; a duplicate, a space
 * inside a URL or another scheme is an error naming the line. -EINVAL with
 * err filled ("'FILE': line N: ..."), -errno when unreadable, -ENOMEM. */
int ctl_inventory_load(const char *path, struct ctl_inventory *ret, char *err, size_t errlen);
/* The same from fd (closed here), already checked; path names it in errors. */
int ctl_inventory_load_fd(int fd, const char *path, struct ctl_inventory *ret, char *err,
                          size_t errlen);
void ctl_inventory_release(struct ctl_inventory *inv);

/* Opens a file the controller reads at start (config, agents, schedule) for
 * reading: agent_trust_open's rules (owner root or us, not group/other
 * writable, nor its directory unless sticky). The fd (>= 0), or -EPERM with
 * err "'FILE': writable by others (mode 0666); must be owned by root or the
 * controller's user and not group/other-writable", or -errno with err
 * "cannot read 'FILE': ...". Read from this fd: no check-then-open gap. */
int ctl_open_trusted(const char *path, char *err, size_t errlen);

/* ctl_open_trusted for a file that a library reader opens by name (the
 * templates CSV, the model JSON): on success fdpath holds "/proc/self/fd/N"
 * of the checked fd, which opens that same file whatever the name points to
 * by then; close the returned fd after reading. */
int ctl_open_trusted_name(const char *path, char *fdpath, size_t size, char *err, size_t errlen);

/* Reads a token into buf: agent_token_load's rules (agent/auth.h), the one
 * token rule of pflexd and the controller; -EINVAL also when it does not
 * fit in size bytes with its NUL. */
int ctl_read_secret(const char *path, char *buf, size_t size, char *err, size_t errlen);

#endif
