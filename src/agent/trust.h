/* What a root daemon may trust: files, directories and sockets that no other
 * user can write (owner root or the program's own user, no group/other write
 * bit), like sshd's StrictModes. One rule and one wording for pflexd and
 * pflex-controller; a refusal's reason names the owner or the mode and the
 * fix ("mode 0666 lets other users write it; use chmod go-w"). */
#ifndef PFLEX_AGENT_TRUST_H
#define PFLEX_AGENT_TRUST_H

#include <stdbool.h>
#include <stddef.h>

/* 0 when the open file (a directory if want_dir) is owned by root or the
 * effective user and not writable by group or others; -EPERM (why in
 * errbuf) otherwise, -ENOTDIR / -EINVAL for the wrong kind of file. A
 * directory itself gets no sticky exception. */
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
 * why ("mode 0666 lets other users write it; use chmod go-w", "its directory
 * '/x': mode 0777 lets ..."; not a regular file is -EPERM too), else -errno
 * (strerror in why; "a symbolic link" for -ELOOP). Used by pflexd for its
 * config file and by pflex-controller for every file it reads. */
int agent_trust_open(const char *path, int *ret_fd, char *why, size_t whylen);

/* Like agent_trust_open, and in addition readable by nobody else (mode 0600
 * or 0400): for token files ("mode 0644 lets other users read it; use chmod
 * 600"). */
int agent_trust_open_secret(const char *path, int *ret_fd, char *why, size_t whylen);

#endif
