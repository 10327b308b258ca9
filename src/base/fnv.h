/* FNV-1a, 64 bits: the one byte hash of pflex's digests and hash tables
 * (curve and refinement digests, the runs' group-name table, the twin's
 * per-run seeds, the controller's GPU-list digest). Well spread, not keyed:
 * never for anything an adversary could choose to collide. */
#ifndef PFLEX_BASE_FNV_H
#define PFLEX_BASE_FNV_H

#include <stddef.h>
#include <stdint.h>

#define PFLEX__FNV1A_INIT 0xcbf29ce484222325ull

/* h continued over n bytes of data. */
static inline uint64_t pflex__fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *b = data;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* h continued over the bytes of the NUL-terminated s (not its NUL); s may be NULL. */
static inline uint64_t pflex__fnv1a_str(uint64_t h, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; p && *p; p++)
    h = (h ^ *p) * 0x100000001b3ull;
  return h;
}

#endif
