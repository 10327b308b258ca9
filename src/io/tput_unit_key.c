/* Stable text keys of the throughput units (declared in pflex/runs_json.h). The
 * keys are part of the store schema and of the runs JSON format: never rename one. */
#include <errno.h>
#include <string.h>

#include "pflex/runs_json.h"

static const struct {
  enum pflex_tput_unit unit;
  const char *key;
} unit_keys[] = {
    {PFLEX_TPUT_TOKENS_PER_S, "tokens_per_s"},
    {PFLEX_TPUT_SAMPLES_PER_S, "samples_per_s"},
    {PFLEX_TPUT_STEPS_PER_S, "steps_per_s"},
    {PFLEX_TPUT_PER_STEP_TIME, "per_step_time"},
};
#define NKEYS (sizeof unit_keys / sizeof unit_keys[0])

const char *pflex_tput_unit_key(enum pflex_tput_unit unit) {
  for (size_t i = 0; i < NKEYS; i++)
    if (unit_keys[i].unit == unit) return unit_keys[i].key;
  return "tokens_per_s";
}

int pflex_tput_unit_from_key(const char *key, enum pflex_tput_unit *ret_unit) {
  if (!key) return -EINVAL;
  for (size_t i = 0; i < NKEYS; i++)
    if (strcmp(unit_keys[i].key, key) == 0) {
      *ret_unit = unit_keys[i].unit;
      return 0;
    }
  return -EINVAL;
}
