/* Transparent huge pages for large arrays: see hugepage.h. */
#include "hugepage.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define HUGE_ALIGN ((uintptr_t)2 << 20)

void *pflex__hugepage_advise(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  if (!p || bytes < PFLEX__HUGEPAGE_MIN) return p;
  uintptr_t a = ((uintptr_t)p + HUGE_ALIGN - 1) & ~(HUGE_ALIGN - 1);
  uintptr_t e = ((uintptr_t)p + bytes) & ~(HUGE_ALIGN - 1);
  /* Advice: a kernel without transparent huge pages refuses it (EINVAL),
   * and the array works the same on small pages. */
  if (e > a) (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
  (void)bytes;
#endif
  return p;
}

static size_t bytes_of(size_t n, size_t size) {
  return size && n > SIZE_MAX / size ? 0 : n * size;
}

/* Large arrays start on a 2 MiB boundary and end on one, so that all of
 * them can be on huge pages (left to malloc, the first and last MiB or so
 * of each were on small ones). */
void *pflex__hugepage_malloc(size_t n, size_t size) {
  size_t b = bytes_of(n, size);
  if (!b) return n && size ? NULL : malloc(1);
  if (b < PFLEX__HUGEPAGE_MIN || b > SIZE_MAX - HUGE_ALIGN) return malloc(b);
  void *p;
  b = (b + HUGE_ALIGN - 1) & ~(size_t)(HUGE_ALIGN - 1);
  return posix_memalign(&p, HUGE_ALIGN, b) ? NULL : pflex__hugepage_advise(p, b);
}

void *pflex__hugepage_calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) return NULL; /* as calloc, without asking it */
  void *p = calloc(n, size);
  return pflex__hugepage_advise(p, bytes_of(n, size));
}

void *pflex__hugepage_realloc(void *p, size_t n, size_t size) {
  size_t b = bytes_of(n, size);
  if (!b && n && size) return NULL;
  return pflex__hugepage_advise(realloc(p, b ? b : 1), b);
}
