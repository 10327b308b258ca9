/* Ownership and mode checks for everything pflexd reads or serves (trust.h). */
#include <errno.h>
#include <fcntl.h>
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
             forbidden & 044 && st->st_mode & 044 ? "other users read it"
                                                  : "other users write it",
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
