/* Bump allocation in chunks: see arena.h. */
#include "arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>

/* Chunks grow from 16 KiB to 1 MiB; a request larger than a quarter of the
 * chunk size gets a chunk of its own (placed behind the current one, so the
 * current one keeps filling). */
#define CHUNK_MIN ((size_t)16 << 10)
#define CHUNK_MAX ((size_t)1 << 20)

struct chunk {
  struct chunk *next;
  size_t used, cap;
  alignas(max_align_t) unsigned char data[];
};

struct pflex__arena {
  struct chunk *head; /* filling */
  size_t bytes, next_cap;
};

static struct chunk *chunk_new(size_t cap) {
  if (cap > SIZE_MAX - sizeof(struct chunk)) return NULL;
  struct chunk *c = malloc(sizeof *c + cap);
  if (c) *c = (struct chunk){.cap = cap};
  return c;
}

static size_t round_up(size_t n) {
  size_t a = alignof(max_align_t);
  return n > SIZE_MAX - (a - 1) ? 0 : (n + a - 1) & ~(a - 1);
}

void *pflex__arena_alloc(struct pflex__arena **ap, size_t n) {
  size_t need = round_up(n);
  if (!need) return NULL;
  struct pflex__arena *a = *ap;
  if (!a) {
    if (!(a = calloc(1, sizeof *a))) return NULL;
    a->next_cap = CHUNK_MIN;
    *ap = a;
  }
  struct chunk *h = a->head;
  if (h && h->cap - h->used >= need) {
    void *p = h->data + h->used;
    h->used += need;
    return p;
  }
  if (need > a->next_cap / 4) { /* its own chunk, behind the one filling */
    struct chunk *c = chunk_new(need);
    if (!c) return NULL;
    c->used = need;
    if (h) {
      c->next = h->next, h->next = c;
    } else {
      a->head = c;
    }
    a->bytes += sizeof *c + need;
    return c->data;
  }
  struct chunk *c = chunk_new(a->next_cap);
  if (!c) return NULL;
  a->bytes += sizeof *c + c->cap;
  if (a->next_cap < CHUNK_MAX) a->next_cap *= 2;
  c->next = h, a->head = c;
  c->used = need;
  return c->data;
}

void pflex__arena_free(struct pflex__arena *a) {
  if (!a) return;
  for (struct chunk *c = a->head, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  free(a);
}

size_t pflex__arena_bytes(const struct pflex__arena *a) {
  return a ? a->bytes : 0;
}
