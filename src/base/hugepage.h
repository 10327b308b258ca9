/* Large arrays on transparent huge pages (internal to the library). The
 * allocator's arrays at 10^5-10^6 jobs are hundreds of MB written once per
 * fill; on 4 KiB pages each first touch is a page fault, and on a virtual
 * machine whose hypervisor maps the guest's page tables one fault costs
 * 15-25 us (bench/README.md, twelfth wave): 118,000 of them were 1.8 s of a
 * 1.9 s fill at 10^6 jobs. Kernels set to "madvise" (Debian's default) give
 * huge pages only to ranges that ask for them. */
#ifndef PFLEX_BASE_HUGEPAGE_H
#define PFLEX_BASE_HUGEPAGE_H

#include <stddef.h>

/* Below this many bytes an array is left on the default pages. */
#define PFLEX__HUGEPAGE_MIN ((size_t)4 << 20)

/* Asks for huge pages on the 2 MiB-aligned part of [p, p + bytes), when
 * bytes is at least PFLEX__HUGEPAGE_MIN. Advice only: where the kernel has
 * none to give (or no such call), nothing changes; p stays the caller's, to
 * free() or realloc() as before. Returns p. */
void *pflex__hugepage_advise(void *p, size_t bytes);

/* malloc(n * size) then the advice; NULL on overflow or no memory. */
void *pflex__hugepage_malloc(size_t n, size_t size);
/* calloc(n, size) then the advice. */
void *pflex__hugepage_calloc(size_t n, size_t size);
/* realloc(p, n * size) then the advice on the new block. */
void *pflex__hugepage_realloc(void *p, size_t n, size_t size);

#endif
