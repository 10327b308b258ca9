/* Shared helpers of the libFuzzer harnesses (tests/fuzz/fuzz_*.c).
 *
 * Every harness defines LLVMFuzzerTestOneInput and includes this header
 * first. Parsers that take a path get the input through fuzz_path(): a memfd
 * reached as /proc/self/fd/N, so no disk file is written per input. A harness
 * checks the parser's contract as well as surviving it: fuzz_check() aborts
 * (which libFuzzer reports as a crash, input saved) when a property fails. */
#ifndef PFLEX_FUZZ_H
#define PFLEX_FUZZ_H

#define _GNU_SOURCE /* memfd_create */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Aborts with a message naming the broken property. */
#define fuzz_check(cond)                                                                     \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond);            \
      abort();                                                                               \
    }                                                                                        \
  } while (0)

/* A NUL-terminated copy of the input (free() it); NULL only when out of memory. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return NULL;
  if (size) memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

/* Replaces the contents of the process's one scratch memfd with the input and
 * returns a path that opens it ("/proc/self/fd/N"), or NULL on failure. */
static inline const char *fuzz_path(const uint8_t *data, size_t size) {
  static int fd = -1;
  static char path[64];
  if (fd < 0) {
    fd = memfd_create("pflex-fuzz", MFD_CLOEXEC);
    if (fd < 0) return NULL;
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  }
  if (ftruncate(fd, 0) != 0) return NULL;
  for (size_t done = 0; done < size;) {
    ssize_t w = pwrite(fd, data + done, size - done, (off_t)done);
    if (w <= 0) return NULL;
    done += (size_t)w;
  }
  return path;
}

#endif
