/* Index sort by a double field (sort_index.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/sort_index.h"

/* Sorting (key, index) pairs carries the context qsort cannot; the index as
 * second key makes the result independent of the qsort used. */
struct key_index {
  double key;
  size_t index;
};

static int cmp_key_index(const void *a, const void *b) {
  const struct key_index *x = a, *y = b;
  if (x->key != y->key) return (x->key > y->key) - (x->key < y->key);
  return (x->index > y->index) - (x->index < y->index);
}

int pflex__sort_index(size_t *idx, size_t n, const void *base, size_t size, size_t off) {
  if (n < 2) return 0;
  struct key_index *tmp = malloc(n * sizeof *tmp);
  if (!tmp) return -ENOMEM;
  for (size_t k = 0; k < n; k++) {
    tmp[k].index = idx[k];
    memcpy(&tmp[k].key, (const char *)base + idx[k] * size + off, sizeof tmp[k].key);
  }
  qsort(tmp, n, sizeof *tmp, cmp_key_index);
  for (size_t k = 0; k < n; k++)
    idx[k] = tmp[k].index;
  free(tmp);
  return 0;
}
