/* The flat optimal's polish (src/core/alloc_flat_polish.c, used by
 * alloc_flat.c): a measured curve held as its cubic pieces, and one job's
 * power where its weighted slope on them meets a threshold slope. Not
 * public API. */
#ifndef PFLEX_CORE_ALLOC_FLAT_POLISH_H
#define PFLEX_CORE_ALLOC_FLAT_POLISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pflex/curve.h"

/* Doubles per piece: x0, then f(x) = y0 + t (b + t (c + t d)), t = x - x0,
 * as x0, y0, b, c, d; a piece ends where the next one starts, and the last
 * one's end follows it (npc pieces: PFLEX__FLAT_PIECE npc + 1 doubles). */
#define PFLEX__FLAT_PIECE 5

/* The pieces of a measured curve (with >= 2 points) that meet [lo, hi],
 * each the cubic pflex_curve_eval uses on it (Steffen or linear), into out (room for
 * points - 1 pieces and an end): their number; 0 for any other curve (or
 * pieces that do not join). */
size_t pflex__flat_pieces(const struct pflex_curve *c, double lo, double hi, double *out);

/* On pieces pc[0..npc) (from pflex__flat_pieces), the power in [a, b]
 * that maximizes w f - lambda p: x (the greedy's power) unless another
 * gains more beyond rounding: an end of a piece's part, or where its slope
 * meets lambda / w on a concave part; NAN when the pieces do not cover a.
 * *ret_k: the piece it lies on, ret_range the part of it (its concave part
 * for a meeting point); *ret_dpdl: the power's derivative in lambda (a
 * meeting point inside a curving part; else 0). */
double pflex__flat_polish(const double *pc, size_t npc, double w, double lambda, double a, double b,
                          double x, size_t *ret_k, double ret_range[2], double *ret_dpdl);

/* Where the slope of piece q meets lambda / w on [xa, xb], a part of it
 * on which it is concave (xa or xb where it does not). Reads q's x0 and
 * its b, c and d only (not y0 nor its end). */
double pflex__flat_polish_piece(const double *q, double xa, double xb, double w, double lambda,
                                double *ret_dpdl);

/* fmin and fmax, NaN rules included (a NaN argument gives the other),
 * inline: libm's are calls, 10% of the flat optimal's instructions. A
 * zero's sign may differ (no power or slope here is a zero of either sign
 * that matters). */
static inline double pflex__flat_fmin(double a, double b) {
  return b < a || a != a ? b : a;
}

static inline double pflex__flat_fmax(double a, double b) {
  return b > a || a != a ? b : a;
}

/* The pieces' value at x (the piece x lies on; the first or last beyond
 * their ends). */
double pflex__flat_value(const double *pc, size_t npc, double x);

/* A small workload's jobs on their pieces, for pflex__flat_pair_search. */
struct pflex__flat_jobs {
  size_t n;
  const double *const *pc; /* per job its pieces (pflex__flat_pieces) */
  const size_t *npc;       /* and their number (0: none) */
  const double *w, *lo, *hi;
};

/* A move must gain more than this share of the total to be taken. */
#define PFLEX__FLAT_PAIR_TOL 1e-9

/* After the polish, on workloads of 2 to 64 jobs that all have pieces:
 * while some pair of jobs gains, one giving ds and the other taking it (ds
 * from the widest job range down by halves, 12 amounts), the best such move
 * (at most 64); where two jobs sit on hull bridges the greedy and the polish
 * cannot leave. The sum of p moves by rounding only; each job stays within
 * its bounds. Nothing changes when a job has no pieces. */
void pflex__flat_pair_search(const struct pflex__flat_jobs *s, double *p);

#endif
