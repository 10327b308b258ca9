/* The Power Flexibility Index (include/pflex/pfi.h). */
#include <errno.h>
#include <math.h>

#include "pflex/pfi.h"

int pflex_pfi_index(double p, double t, double p_max, double t_max, double *ret) {
  if (!(p > 0) || !(t > 0) || !(p_max > 0) || !(t_max > 0)) return -EINVAL;
  if (t == t_max) return -EDOM;
  *ret = (1.0 - p / p_max) / (1.0 - t / t_max);
  return 0;
}
