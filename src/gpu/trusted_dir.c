/* Directories and files a root process may trust (trusted_dir.h).
 *
 * The chain is walked from the opened directory upwards through "..", so it
 * is the chain of the directory really opened, symlinks in the given path
 * resolved, not of a name that may be swapped after the check. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/trusted_dir.h"

static void say(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t whylen, const char *fmt, ...) {
  if (!why || !whylen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, whylen, fmt, ap);
  va_end(ap);
}

static bool owner_ok(const struct stat *st) {
  return st->st_uid == 0 || st->st_uid == geteuid();
}

/* The name of the directory `up` levels above canonical path `real`. */
static void ancestor_name(const char *real, unsigned up, char *buf, size_t size) {
  snprintf(buf, size, "%s", real);
  for (unsigned i = 0; i < up; i++) {
    char *slash = strrchr(buf, '/');
    if (!slash) break;
    if (slash == buf)
      slash[1] = '\0';
    else
      *slash = '\0';
  }
}

static int check_dir(const struct stat *st, bool leaf, const char *name, char *why,
                     size_t whylen) {
  if (!owner_ok(st)) {
    say(why, whylen,
        "'%s' is owned by uid %lu, neither root nor you (uid %lu): another user could rewrite "
        "or delete the original limits in it",
        name, (unsigned long)st->st_uid, (unsigned long)geteuid());
    return -EPERM;
  }
  bool writable = (st->st_mode & (S_IWGRP | S_IWOTH)) != 0;
  /* Above the state directory a sticky directory (/tmp) is fine: others may
   * add entries to it but not rename or remove ours. */
  if (writable && (leaf || !(st->st_mode & S_ISVTX))) {
    say(why, whylen,
        "'%s' is writable by its group or others (mode %04lo): another user could rewrite "
        "or delete the original limits in it; chmod go-w it",
        name, (unsigned long)(st->st_mode & 07777));
    return -EPERM;
  }
  return 0;
}

static int walk_up(int fd, const char *real, char *why, size_t whylen) {
  int cur = dup(fd);
  if (cur < 0) return -errno;
  for (unsigned up = 1;; up++) {
    struct stat a, b;
    int parent = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parent < 0 || fstat(cur, &a) != 0 || fstat(parent, &b) != 0) {
      int err = -errno;
      close(cur);
      if (parent >= 0) close(parent);
      return err;
    }
    close(cur);
    cur = parent;
    if (a.st_dev == b.st_dev && a.st_ino == b.st_ino) break; /* "/" is its own parent */
    char name[PATH_MAX];
    ancestor_name(real, up, name, sizeof name);
    int err = check_dir(&b, false, name, why, whylen);
    if (err) {
      close(cur);
      return err;
    }
  }
  close(cur);
  return 0;
}

static int fsync_parent(const char *path) {
  char copy[PATH_MAX];
  snprintf(copy, sizeof copy, "%s", path);
  int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  int err = fsync(fd) == 0 ? 0 : -errno;
  close(fd);
  return err == -EINVAL ? 0 : err; /* a file system that cannot fsync directories */
}

int pflex__trusted_dir_open(const char *path, bool create, int *ret_fd, char *why,
                            size_t whylen) {
  if (why && whylen) why[0] = '\0';
  if (strlen(path) >= PATH_MAX - 16) return -ENAMETOOLONG;
  if (create) {
    if (mkdir(path, 0755) == 0) {
      /* A new directory's own entry must be durable too, or a crash could
       * lose the directory with the first record in it. */
      int err = fsync_parent(path);
      if (err) return err;
    } else if (errno != EEXIST) {
      return -errno;
    }
  }
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  struct stat st;
  char real[PATH_MAX];
  int err = fstat(fd, &st) == 0 ? 0 : -errno;
  if (!err && !realpath(path, real)) snprintf(real, sizeof real, "%s", path);
  if (!err) err = check_dir(&st, true, path, why, whylen);
  if (!err) err = walk_up(fd, real, why, whylen);
  if (err) {
    close(fd);
    return err;
  }
  *ret_fd = fd;
  return 0;
}

int pflex__trusted_file_check(int fd, const char *name, char *why, size_t whylen) {
  struct stat st;
  if (fstat(fd, &st) != 0) return -errno;
  if (!S_ISREG(st.st_mode)) {
    say(why, whylen, "'%s' is not a regular file", name);
    return -EPERM;
  }
  if (!owner_ok(&st)) {
    say(why, whylen, "'%s' is owned by uid %lu, neither root nor you (uid %lu)", name,
        (unsigned long)st.st_uid, (unsigned long)geteuid());
    return -EPERM;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    say(why, whylen, "'%s' is writable by its group or others (mode %04lo)", name,
        (unsigned long)(st.st_mode & 07777));
    return -EPERM;
  }
  return 0;
}
