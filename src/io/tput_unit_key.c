/* Stable text keys of the throughput units (declared in pflex/runs_json.h),
 * from the one unit table (pflex_tput_unit_info, core). */
#include <errno.h>
#include <string.h>

#include "pflex/runs_json.h"

const char *pflex_tput_unit_key(enum pflex_tput_unit unit) {
  const struct pflex_tput_unit_info *u = pflex_tput_unit_info(unit);
  return u ? u->key : "tokens_per_s";
}

int pflex_tput_unit_from_key(const char *key, enum pflex_tput_unit *ret_unit) {
  const struct pflex_tput_unit_info *u;
  for (size_t i = 0; key && (u = pflex_tput_unit_at(i)); i++)
    if (strcmp(u->key, key) == 0) {
      *ret_unit = u->unit;
      return 0;
    }
  return -EINVAL;
}
