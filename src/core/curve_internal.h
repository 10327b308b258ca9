/* What other core modules read of a measured curve's interpolant beyond
 * the public API (include/pflex/curve.h). Not public API. */
#ifndef PFLEX_CORE_CURVE_INTERNAL_H
#define PFLEX_CORE_CURVE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "pflex/curve.h"

/* The cubic pflex_curve_eval uses on interval i of measured curve c
 * (between its points i and i + 1): f(x) = q[0] + t (q[1] + t (q[2] + t
 * q[3])), t = x - x_i; for linear interpolation q[2] = q[3] = 0. False for
 * any other curve or interval. */
bool pflex__curve_interval_cubic(const struct pflex_curve *c, size_t i, double q[4]);

#endif
