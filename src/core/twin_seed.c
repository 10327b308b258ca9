/* The reference set's noise and per-run seeds (twin_internal.h), shared by the
 * reference sweep (twin_reference.c) and the calibration (twin_calibrate.c),
 * so that each run gets the same noise whichever grid it is part of. */
#include <math.h>
#include <stdint.h>

#include "base/fnv.h"
#include "core/twin_internal.h"

void pflex__twin_reference_noise(struct pflex_twin_noise *noise) {
  noise->power_cv = 0.0004;
  noise->tput_cv = 0.0005;
  noise->metric_cv = 0.03;
}

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t pflex__twin_run_seed(uint64_t seed, const char *name, double cap_w) {
  uint64_t h = pflex__fnv1a_str(PFLEX__FNV1A_INIT, name); /* of the group name */
  return splitmix64(splitmix64(seed ^ h) + (uint64_t)llround(cap_w * 10.0));
}
