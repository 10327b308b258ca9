/* The job-mapping directory (spank_mapdir.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spank_mapdir.h"

/* The directory, opened without following a symlink, when root owns it and
 * no one else may write it; else -1 with the reason in msg. */
static int open_trusted_dir(const char *dir, char *msg, size_t msglen) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd < 0) {
    snprintf(msg, msglen, "job mapping directory %s: %s", dir, strerror(errno));
    return -1;
  }
  if (fstat(fd, &st) != 0 || st.st_uid != 0 || (st.st_mode & 022)) {
    snprintf(msg, msglen,
             "job mapping directory %s: must be owned by root and writable by no one else", dir);
    close(fd);
    return -1;
  }
  return fd;
}

/* dirfd/name := "job\n", through a temporary file and a rename. */
static int write_entry(int dirfd, const char *name, const char *job) {
  char tmp[64], text[80];
  snprintf(tmp, sizeof tmp, ".%s.pflex-%ld", name, (long)getpid());
  int len = snprintf(text, sizeof text, "%s\n", job);
  unlinkat(dirfd, tmp, 0);
  int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return -errno;
  int err = write(fd, text, (size_t)len) == len ? 0 : -EIO;
  if (close(fd) != 0 && !err) err = -errno;
  if (!err && renameat(dirfd, tmp, dirfd, name) != 0) err = -errno;
  if (err) unlinkat(dirfd, tmp, 0);
  return err;
}

int pflex_spank_mapdir_write(const char *dir, const char *job, const unsigned *gpus, size_t n,
                             char *msg, size_t msglen) {
  int dirfd = open_trusted_dir(dir, msg, msglen);
  if (dirfd < 0) return -EPERM;
  int err = 0;
  for (size_t k = 0; !err && k < n; k++) {
    char name[16];
    snprintf(name, sizeof name, "%u", gpus[k]);
    err = write_entry(dirfd, name, job);
    if (err) snprintf(msg, msglen, "job mapping %s/%s: %s", dir, name, strerror(-err));
  }
  close(dirfd);
  return err;
}

static bool is_index(const char *s) {
  if (!*s || strlen(s) > 4) return false;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return false;
  return true;
}

/* Whether dirfd/name is a regular file whose first line is job. */
static bool names_job(int dirfd, const char *name, const char *job) {
  char buf[128];
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  ssize_t got = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, sizeof buf - 1) : -1;
  close(fd);
  if (got < 0) return false;
  buf[got] = '\0';
  buf[strcspn(buf, "\r\n \t")] = '\0';
  return strcmp(buf, job) == 0;
}

int pflex_spank_mapdir_clear(const char *dir, const char *job, size_t *ret_removed, char *msg,
                             size_t msglen) {
  *ret_removed = 0;
  int dirfd = open_trusted_dir(dir, msg, msglen);
  if (dirfd < 0) return -EPERM;
  DIR *d = fdopendir(dup(dirfd));
  if (!d) {
    snprintf(msg, msglen, "job mapping directory %s: %s", dir, strerror(errno));
    close(dirfd);
    return -EIO;
  }
  int err = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (!is_index(e->d_name) || !names_job(dirfd, e->d_name, job)) continue;
    if (unlinkat(dirfd, e->d_name, 0) == 0)
      ++*ret_removed;
    else if (errno != ENOENT) {
      err = -errno;
      snprintf(msg, msglen, "job mapping %s/%s: %s", dir, e->d_name, strerror(errno));
    }
  }
  closedir(d);
  close(dirfd);
  return err;
}
