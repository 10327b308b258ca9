/* A loop over indices on several threads (include/pflex/parallel.h). */
#include "pflex/parallel.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* One mutex guards the hand-out and the outcome: a call is a whole workload
 * or a group's curves (milliseconds), so one lock a call costs nothing, and
 * pthread's locks are what valgrind's thread checkers follow. */
struct loop {
  size_t n;
  pflex_parallel_fn fn;
  void *ctx;
  pthread_mutex_t mu;
  size_t next;     /* the next index to hand out */
  size_t finished; /* calls returned */
  size_t err_at;   /* the lowest failing index, SIZE_MAX for none */
  int err;
};

struct worker {
  struct loop *l;
  unsigned id;
};

/* The next index, or SIZE_MAX when none is left or a call failed. */
static size_t take(struct loop *l) {
  pthread_mutex_lock(&l->mu);
  size_t i = l->next < l->n && l->err_at == SIZE_MAX ? l->next++ : SIZE_MAX;
  pthread_mutex_unlock(&l->mu);
  return i;
}

/* Runs one index; false when none was left. *finished: the calls returned. */
static bool run_one(struct loop *l, unsigned id, size_t *finished) {
  size_t i = take(l);
  if (i == SIZE_MAX) return false;
  int err = l->fn(l->ctx, id, i);
  pthread_mutex_lock(&l->mu);
  if (err && i < l->err_at) l->err_at = i, l->err = err;
  *finished = ++l->finished;
  pthread_mutex_unlock(&l->mu);
  return true;
}

static void *thread_main(void *arg) {
  struct worker *w = arg;
  size_t finished;
  while (run_one(w->l, w->id, &finished)) {
  }
  return NULL;
}

int pflex_parallel_for(size_t n, unsigned threads, pflex_parallel_fn fn, void *ctx,
                       void (*done)(void *ctx, size_t finished)) {
  if (threads <= 1 || n <= 1) {
    for (size_t i = 0; i < n; i++) {
      int err = fn(ctx, 0, i);
      if (err) return err;
      if (done) done(ctx, i + 1);
    }
    return 0;
  }
  if (threads > n) threads = (unsigned)n;
  struct loop l = {.n = n, .fn = fn, .ctx = ctx, .err_at = SIZE_MAX};
  if (pthread_mutex_init(&l.mu, NULL)) return -ENOMEM;
  pthread_t *tid = calloc(threads, sizeof *tid);
  struct worker *w = calloc(threads, sizeof *w);
  unsigned started = 1; /* the caller's thread is worker 0 */
  for (unsigned t = 1; tid && w && t < threads; t++) {
    w[t] = (struct worker){&l, t};
    if (pthread_create(&tid[t], NULL, thread_main, &w[t])) break; /* on with fewer */
    started++;
  }
  size_t finished = 0;
  while (run_one(&l, 0, &finished))
    if (done) done(ctx, finished);
  for (unsigned t = 1; t < started; t++)
    pthread_join(tid[t], NULL);
  if (done) done(ctx, l.finished);
  free(tid);
  free(w);
  pthread_mutex_destroy(&l.mu);
  return l.err_at == SIZE_MAX ? 0 : l.err;
}
