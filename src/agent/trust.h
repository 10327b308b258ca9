/* What a root daemon may trust: files, directories and sockets that no other
 * user can write (owner root or pflexd's own user, no group/other write
 * bit), like sshd's StrictModes. */
#ifndef PFLEX_AGENT_TRUST_H
#define PFLEX_AGENT_TRUST_H

#include <stdbool.h>
#include <stddef.h>

/* 0 when the open file (a directory if want_dir) is owned by root or the
 * effective user and not writable by group or others; -EPERM (why in
 * errbuf) otherwise, -ENOTDIR / -EINVAL for the wrong kind of file. */
int agent_trust_fd(int fd, bool want_dir, char *errbuf, size_t errlen);

/* Like agent_trust_fd, and in addition readable by nobody else (mode 0600
 * or 0400): for secrets such as the token file. */
int agent_trust_secret_fd(int fd, char *errbuf, size_t errlen);

/* Opens a directory without following a final symlink and checks it with
 * agent_trust_fd. With create, a missing directory is made (mode 0755). */
int agent_trust_dir(const char *path, bool create, char *errbuf, size_t errlen);

/* Opens regular file `path` for reading, relative to its checked directory
 * and without following a final symlink, so that what is read is what was
 * checked. The file must be owned by root or the effective user and not
 * writable by group or others; its directory likewise owned, and not
 * writable by group or others unless sticky (/tmp). -EPERM with the reason in
 * why ("writable by others (mode 0666)"), else -errno (strerror in why).
 * Used by pflex-controller for its config, agents and schedule files. */
int agent_trust_open(const char *path, int *ret_fd, char *why, size_t whylen);

#endif
