/* libpflex-fault.so: an LD_PRELOAD shim that makes chosen system calls fail,
 * to show what pflex does when its restore record cannot be made durable.
 * env PFLEX_FAULT is a comma-separated list of: rename, fsync (each then
 * fails with EIO). Nothing else changes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int faulty(const char *call) {
  const char *s = getenv("PFLEX_FAULT");
  if (!s) return 0;
  size_t n = strlen(call);
  for (const char *p = s; (p = strstr(p, call)) != NULL; p += n)
    if ((p == s || p[-1] == ',') && (p[n] == '\0' || p[n] == ',')) return 1;
  return 0;
}

int rename(const char *from, const char *to) {
  if (faulty("rename")) {
    errno = EIO;
    return -1;
  }
  int (*real)(const char *, const char *) =
      (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
  return real(from, to);
}

int fsync(int fd) {
  if (faulty("fsync")) {
    errno = EIO;
    return -1;
  }
  int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  return real(fd);
}
