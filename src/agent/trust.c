/* Ownership and mode checks for everything pflexd reads or serves (trust.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/trust.h"

static int check_stat(const struct stat *st, bool want_dir, mode_t forbidden, char *errbuf,
                      size_t errlen) {
  if (want_dir && !S_ISDIR(st->st_mode)) {
    snprintf(errbuf, errlen, "not a directory");
    return -ENOTDIR;
  }
  if (!want_dir && !S_ISREG(st->st_mode)) {
    snprintf(errbuf, errlen, "not a regular file");
    return -EINVAL;
  }
  if (st->st_uid != 0 && st->st_uid != geteuid()) {
    snprintf(errbuf, errlen, "owned by uid %u, not by root", (unsigned)st->st_uid);
    return -EPERM;
  }
  if (st->st_mode & forbidden) {
    snprintf(errbuf, errlen, "mode %04o lets %s; use chmod %s", (unsigned)(st->st_mode & 07777),
             forbidden & 044 && st->st_mode & 044 ? "other users read it" : "other users write it",
             forbidden & 044 ? "600" : "go-w");
    return -EPERM;
  }
  return 0;
}

int agent_trust_fd(int fd, bool want_dir, char *errbuf, size_t errlen) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    snprintf(errbuf, errlen, "%s", strerror(errno));
    return -errno;
  }
  return check_stat(&st, want_dir, S_IWGRP | S_IWOTH, errbuf, errlen);
}

int agent_trust_secret_fd(int fd, char *errbuf, size_t errlen) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    snprintf(errbuf, errlen, "%s", strerror(errno));
    return -errno;
  }
  return check_stat(&st, false, S_IRWXG | S_IRWXO, errbuf, errlen);
}

int agent_trust_dir(const char *path, bool create, char *errbuf, size_t errlen) {
  if (create && mkdir(path, 0755) != 0 && errno != EEXIST) {
    snprintf(errbuf, errlen, "cannot create it: %s", strerror(errno));
    return -errno;
  }
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int err = -errno;
    snprintf(errbuf, errlen, "%s", errno == ELOOP ? "a symbolic link" : strerror(errno));
    return err;
  }
  int err = agent_trust_fd(fd, true, errbuf, errlen);
  close(fd);
  return err;
}

/* The owner and write-bit rule of agent_trust_open for the file, or for its
 * directory `dir`, where a sticky bit excuses group/other write. */
static int check_owner_mode(const struct stat *st, const char *dir, char *why, size_t whylen) {
  char who[PATH_MAX + 32] = "";
  if (dir) snprintf(who, sizeof who, "its directory '%s' is ", dir);
  if (st->st_uid != 0 && st->st_uid != geteuid()) {
    snprintf(why, whylen, "%sowned by uid %u", who, (unsigned)st->st_uid);
    return -EPERM;
  }
  if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(dir && (st->st_mode & S_ISVTX))) {
    snprintf(why, whylen, "%swritable by others%s (mode %04o)", who,
             dir ? " without the sticky bit" : "", (unsigned)(st->st_mode & 07777));
    return -EPERM;
  }
  return 0;
}

int agent_trust_open(const char *path, int *ret_fd, char *why, size_t whylen) {
  char dcopy[PATH_MAX], bcopy[PATH_MAX];
  if (snprintf(dcopy, sizeof dcopy, "%s", path) >= (int)sizeof dcopy) {
    snprintf(why, whylen, "%s", strerror(ENAMETOOLONG));
    return -ENAMETOOLONG;
  }
  snprintf(bcopy, sizeof bcopy, "%s", path);
  const char *dname = dirname(dcopy), *base = basename(bcopy);
  int dfd = open(dname, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st;
  int err = dfd < 0 || fstat(dfd, &st) != 0 ? -errno : 0;
  if (!err) err = check_owner_mode(&st, dname, why, whylen);
  /* O_NONBLOCK: a FIFO planted in its place is refused, not waited on. */
  int fd = err ? -1 : openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (!err && (fd < 0 || fstat(fd, &st) != 0)) err = -errno;
  if (dfd >= 0) close(dfd);
  if (!err && !S_ISREG(st.st_mode)) {
    snprintf(why, whylen, "not a regular file");
    err = -EPERM;
  }
  if (!err) err = check_owner_mode(&st, NULL, why, whylen);
  if (err && err != -EPERM)
    snprintf(why, whylen, "%s", err == -ELOOP ? "a symbolic link" : strerror(-err));
  if (err) {
    if (fd >= 0) close(fd);
    return err;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  *ret_fd = fd;
  return 0;
}
