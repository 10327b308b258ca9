/* Ownership and mode checks for everything pflexd and pflex-controller read
 * or serve (trust.h): one rule, one message, for files and directories. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/trust.h"

/* What is checked: a file, a directory, or the directory holding a file,
 * which a sticky bit (like /tmp's) excuses from group/other write: there
 * others cannot rename or remove what is not theirs. */
enum trust_kind { TRUST_FILE, TRUST_DIR, TRUST_HOLDER };

/* The reason names what is wrong (the kind, the owner or the mode) and the
 * fix; for a holder it starts with "its directory 'D': ". */
static int check_stat(const struct stat *st, enum trust_kind kind, const char *holder,
                      mode_t forbidden, char *why, size_t len) {
  char who[PATH_MAX + 24] = "";
  if (kind == TRUST_HOLDER) snprintf(who, sizeof who, "its directory '%s': ", holder);
  if (kind != TRUST_FILE && !S_ISDIR(st->st_mode)) {
    snprintf(why, len, "%snot a directory", who);
    return -ENOTDIR;
  }
  if (kind == TRUST_FILE && !S_ISREG(st->st_mode)) {
    snprintf(why, len, "not a regular file");
    return -EINVAL;
  }
  uid_t us = geteuid();
  if (st->st_uid != 0 && st->st_uid != us) {
    if (us == 0)
      snprintf(why, len, "%sowned by uid %u, not by root; use chown root", who,
               (unsigned)st->st_uid);
    else
      snprintf(why, len, "%sowned by uid %u, neither root nor uid %u (ours); use chown", who,
               (unsigned)st->st_uid, (unsigned)us);
    return -EPERM;
  }
  mode_t bad = st->st_mode & forbidden;
  if (kind == TRUST_HOLDER && (st->st_mode & S_ISVTX)) bad &= ~(mode_t)(S_IWGRP | S_IWOTH);
  if (bad) {
    snprintf(why, len, "%smode %04o lets other users %s it; use chmod %s", who,
             (unsigned)(st->st_mode & 07777),
             bad & 022  ? "write"
             : bad & 044 ? "read"
                         : "run",
             forbidden & 044 ? "600" : "go-w");
    return -EPERM;
  }
  return 0;
}

static int fd_check(int fd, enum trust_kind kind, mode_t forbidden, char *why, size_t len) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    snprintf(why, len, "%s", strerror(errno));
    return -errno;
  }
  return check_stat(&st, kind, NULL, forbidden, why, len);
}

int agent_trust_fd(int fd, bool want_dir, char *errbuf, size_t errlen) {
  return fd_check(fd, want_dir ? TRUST_DIR : TRUST_FILE, S_IWGRP | S_IWOTH, errbuf, errlen);
}

int agent_trust_secret_fd(int fd, char *errbuf, size_t errlen) {
  return fd_check(fd, TRUST_FILE, S_IRWXG | S_IRWXO, errbuf, errlen);
}

/* -errno of a failed call, its text in why ("a symbolic link" for O_NOFOLLOW's). */
static int sys_error(char *why, size_t len) {
  int e = errno;
  snprintf(why, len, "%s", e == ELOOP ? "a symbolic link" : strerror(e));
  return -e;
}

int agent_trust_dir(const char *path, bool create, char *errbuf, size_t errlen) {
  if (create && mkdir(path, 0755) != 0 && errno != EEXIST) {
    int err = -errno;
    snprintf(errbuf, errlen, "cannot create it: %s", strerror(errno));
    return err;
  }
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return sys_error(errbuf, errlen);
  int err = agent_trust_fd(fd, true, errbuf, errlen);
  close(fd);
  return err;
}

/* agent_trust_open and agent_trust_open_secret: the directory, then the file
 * opened relative to it, each checked by check_stat. */
static int open_checked(const char *path, mode_t forbidden, int *ret_fd, char *why, size_t len) {
  char dcopy[PATH_MAX], bcopy[PATH_MAX];
  if (snprintf(dcopy, sizeof dcopy, "%s", path) >= (int)sizeof dcopy) {
    snprintf(why, len, "%s", strerror(ENAMETOOLONG));
    return -ENAMETOOLONG;
  }
  snprintf(bcopy, sizeof bcopy, "%s", path);
  const char *dname = dirname(dcopy), *base = basename(bcopy);
  struct stat st;
  int dfd = open(dname, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = -1, err;
  if (dfd < 0 || fstat(dfd, &st) != 0)
    err = sys_error(why, len);
  else
    err = check_stat(&st, TRUST_HOLDER, dname, S_IWGRP | S_IWOTH, why, len);
  /* O_NONBLOCK: a FIFO planted in its place is refused, not waited on. */
  if (!err && ((fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0 ||
               fstat(fd, &st) != 0))
    err = sys_error(why, len);
  if (dfd >= 0) close(dfd);
  if (!err) err = check_stat(&st, TRUST_FILE, NULL, forbidden, why, len);
  if (err) {
    if (fd >= 0) close(fd);
    return err == -EINVAL ? -EPERM : err; /* not a regular file: refused like a bad mode */
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  *ret_fd = fd;
  return 0;
}

int agent_trust_open(const char *path, int *ret_fd, char *why, size_t whylen) {
  return open_checked(path, S_IWGRP | S_IWOTH, ret_fd, why, whylen);
}

int agent_trust_open_secret(const char *path, int *ret_fd, char *why, size_t whylen) {
  return open_checked(path, S_IRWXG | S_IRWXO, ret_fd, why, whylen);
}
