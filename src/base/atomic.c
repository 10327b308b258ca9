/* Atomic file replacement (base/atomic.h). Write errors keep their errno
 * (a full disk is ENOSPC, not EIO). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic.h"

int pflex__atomic_begin(const char *path, struct pflex__atomic_file *ret) {
  struct pflex__atomic_file af = {0};
  af.path = strdup(path);
  af.tmp = malloc(strlen(path) + 16);
  if (!af.path || !af.tmp) {
    free(af.path);
    free(af.tmp);
    return -ENOMEM;
  }
  sprintf(af.tmp, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(af.tmp);
  if (fd < 0) {
    int err = -errno;
    free(af.path);
    free(af.tmp);
    return err;
  }
  af.f = fdopen(fd, "w");
  if (!af.f) {
    int err = -errno;
    close(fd);
    unlink(af.tmp);
    free(af.path);
    free(af.tmp);
    return err;
  }
  fchmod(fd, 0644);
  *ret = af;
  return 0;
}

static int fsync_dir_of(const char *path) {
  char *copy = strdup(path);
  if (!copy) return -ENOMEM;
  int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
  free(copy);
  if (fd < 0) return -errno;
  int err = fsync(fd) ? -errno : 0;
  close(fd);
  /* Some file systems cannot fsync a directory; the rename is still atomic. */
  return err == -EINVAL ? 0 : err;
}

int pflex__atomic_commit(struct pflex__atomic_file *af) {
  int err = 0;
  if (fflush(af->f) != 0) err = errno ? -errno : -EIO;
  else if (ferror(af->f)) err = -EIO;
  if (!err && fsync(fileno(af->f)) != 0) err = -errno;
  if (fclose(af->f) != 0 && !err) err = -errno;
  af->f = NULL;
  if (!err && rename(af->tmp, af->path) != 0) err = -errno;
  if (err) unlink(af->tmp);
  if (!err) err = fsync_dir_of(af->path);
  free(af->path);
  free(af->tmp);
  af->path = af->tmp = NULL;
  return err;
}

void pflex__atomic_abort(struct pflex__atomic_file *af) {
  if (!af || !af->tmp) return;
  if (af->f) fclose(af->f);
  unlink(af->tmp);
  free(af->path);
  free(af->tmp);
  memset(af, 0, sizeof *af);
}

int pflex__atomic_write_text(const char *path, const char *text) {
  struct pflex__atomic_file af;
  int err = pflex__atomic_begin(path, &af);
  if (err) return err;
  size_t len = strlen(text);
  errno = 0;
  if (fputs(text, af.f) == EOF ||
      ((len == 0 || text[len - 1] != '\n') && fputc('\n', af.f) == EOF)) {
    err = errno ? -errno : -EIO;
    pflex__atomic_abort(&af);
    return err;
  }
  return pflex__atomic_commit(&af);
}
