/* libpflex-fault.so: an LD_PRELOAD shim that makes chosen system calls fail,
 * to show what pflex does when its restore records cannot be made durable.
 *
 * env PFLEX_FAULT is a comma-separated list of CALL[=ERRNO][@N]:
 *   CALL   rename, fsync, write or fflush (rename covers renameat too)
 *   ERRNO  EIO (default), ENOSPC, EROFS or EDQUOT
 *   @N     fail from the N-th call of CALL on (default 1: every call)
 * write and fflush fail only on files whose path contains env
 * PFLEX_FAULT_PATH (default "restore.json"), so that output to the terminal
 * or a pipe goes on; rename and fsync fail on every file (a full disk). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static const struct {
  const char *name;
  int err;
} errnos[] = {{"EIO", EIO}, {"ENOSPC", ENOSPC}, {"EROFS", EROFS}, {"EDQUOT", EDQUOT}};

enum { C_RENAME, C_FSYNC, C_WRITE, C_FFLUSH, NCALLS };
static const char *const call_names[NCALLS] = {"rename", "fsync", "write", "fflush"};
static unsigned long counts[NCALLS];

/* The errno to fail this call with, or 0. */
static int faulty(int call) {
  const char *s = getenv("PFLEX_FAULT");
  if (!s) return 0;
  unsigned long nth = ++counts[call];
  size_t n = strlen(call_names[call]);
  for (const char *p = s; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
    if (strncmp(p, call_names[call], n) != 0 || (p[n] && !strchr("=@,", p[n]))) continue;
    int err = EIO;
    const char *q = p + n;
    if (*q == '=') {
      q++;
      for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; i++)
        if (strncmp(q, errnos[i].name, strlen(errnos[i].name)) == 0) err = errnos[i].err;
      q += strcspn(q, "@,");
    }
    unsigned long from = *q == '@' ? strtoul(q + 1, NULL, 10) : 1;
    if (nth >= from) return err;
  }
  return 0;
}

static int path_selected(int fd) {
  char link[64], target[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t len = readlink(link, target, sizeof target - 1);
  if (len < 0) return 0;
  target[len] = '\0';
  const char *want = getenv("PFLEX_FAULT_PATH");
  return strstr(target, want && *want ? want : "restore.json") != NULL;
}

#define REAL(type, name, args) ((type(*) args)dlsym(RTLD_NEXT, name))

int rename(const char *from, const char *to) {
  int err = faulty(C_RENAME);
  if (err) return errno = err, -1;
  return REAL(int, "rename", (const char *, const char *))(from, to);
}

int renameat(int dfrom, const char *from, int dto, const char *to) {
  int err = faulty(C_RENAME);
  if (err) return errno = err, -1;
  return REAL(int, "renameat", (int, const char *, int, const char *))(dfrom, from, dto, to);
}

int fsync(int fd) {
  int err = faulty(C_FSYNC);
  if (err) return errno = err, -1;
  return REAL(int, "fsync", (int))(fd);
}

ssize_t write(int fd, const void *buf, size_t len) {
  int err = path_selected(fd) ? faulty(C_WRITE) : 0;
  if (err) return errno = err, -1;
  return REAL(ssize_t, "write", (int, const void *, size_t))(fd, buf, len);
}

int fflush(FILE *f) {
  int err = f && path_selected(fileno(f)) ? faulty(C_FFLUSH) : 0;
  if (err) return errno = err, EOF;
  return REAL(int, "fflush", (FILE *))(f);
}
