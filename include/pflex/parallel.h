/* A loop over indices run on several threads, with a sequential loop's
 * result: the library's threads (the study's workloads and curves) and the
 * programs' (every group's PFI and its Monte Carlo CI). */
#ifndef PFLEX_PARALLEL_H
#define PFLEX_PARALLEL_H

#include <stddef.h>

/* fn(ctx, worker, i) for i in [0, n): worker is which thread runs it, 0 for
 * the caller's, so that fn can use per-worker scratch. Returns 0 or a
 * negative errno. */
typedef int (*pflex_parallel_fn)(void *ctx, unsigned worker, size_t i);

/* Runs fn for every i in [0, n) on up to `threads` threads (0 and 1: the
 * caller's alone, in order; fewer where a thread cannot be started), the
 * caller's among them. Indices are handed out in increasing order and none
 * after a call fails, so what is returned is what a plain loop that stops at
 * its first failure returns: the error of the lowest failing index, or 0.
 * done (may be NULL) is called on the caller's thread only, with how many
 * calls have finished, after each of the caller's own calls and once at
 * the end. */
int pflex_parallel_for(size_t n, unsigned threads, pflex_parallel_fn fn, void *ctx,
                       void (*done)(void *ctx, size_t finished));

#endif
