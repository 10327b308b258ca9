/* Internal: sorting a list of element indexes by a double field of the
 * elements, with ties in index order (qsort has no context argument and core
 * keeps no globals, so runs.c and pfi.c share this instead of each working
 * around it). */
#ifndef PFLEX_CORE_SORT_INDEX_H
#define PFLEX_CORE_SORT_INDEX_H

#include <stddef.h>

/* Sorts idx[0..n) so that the keys ascend, the key of index i being the double
 * at byte offset off of element i of the array base (elements size bytes
 * apart); equal keys keep ascending index order. 0 or -ENOMEM. */
int pflex__sort_index(size_t *idx, size_t n, const void *base, size_t size, size_t off);

#endif
