/* The Power Flexibility Index (paper.md section 1). */
#ifndef PFLEX_PFI_H
#define PFLEX_PFI_H

#include <stddef.h>

/* Per-cap index of Eq. 1: (1 - p/p_max) / (1 - t/t_max). Returns -EDOM when
 * t == t_max (the paper excludes such runs), -EINVAL on non-positive inputs. */
int pflex_pfi_index(double p, double t, double p_max, double t_max, double *ret);

#endif
