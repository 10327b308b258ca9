/* A bump allocator for many small strings that live and die together
 * (internal to the library): a runset's strings, 19 per run of a file with
 * 14 telemetry columns, were 19 mallocs and frees each (4.6 M at 240,000
 * runs), with 16 bytes of malloc's header on each. Nothing in an arena is
 * freed on its own; pflex__arena_free frees it all. */
#ifndef PFLEX_BASE_ARENA_H
#define PFLEX_BASE_ARENA_H

#include <stddef.h>

struct pflex__arena;

/* n bytes (n > 0), aligned for any object, from arena *a (made on first use,
 * *a NULL before); NULL when memory runs out (*a unchanged but usable). */
void *pflex__arena_alloc(struct pflex__arena **a, size_t n);
/* Frees the arena and everything in it; accepts NULL. */
void pflex__arena_free(struct pflex__arena *a);
/* Bytes held (chunks, headers included): for tests and accounting. */
size_t pflex__arena_bytes(const struct pflex__arena *a);

#endif
