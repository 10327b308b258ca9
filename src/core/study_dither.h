/* Internal: the closed loop's dither (docs/study.md, "Ninth wave"). */
#ifndef PFLEX_CORE_STUDY_DITHER_H
#define PFLEX_CORE_STUDY_DITHER_H

#include <stddef.h>

/* Moves every job j whose power p[j] lies within near x pm[j] of the power
 * pobs[j] it was last observed at to pobs[j] + d x pm[j] or pobs[j] - d x
 * pm[j] (d > near), inside its bounds [lo[j], hi[j]], so that its next
 * observation is at a second power. The signs are chosen to keep the
 * running sum of the moves nearest zero, first for the jobs that fit one way
 * only, then the largest moves first; the side left over is then scaled
 * down so that the moves sum to zero watts (never more power than before).
 * idx and mv: n each, scratch. Returns how many jobs moved. */
size_t pflex__study_dither(size_t n, double *p, const double *pobs, const double *lo,
                           const double *hi, const double *pm, double d, double near, size_t *idx,
                           double *mv);

#endif
