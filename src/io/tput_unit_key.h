/* Stable text keys of the throughput units, shared by the store and the runs
 * JSON format (where a unit is written down and must read back the same). */
#ifndef PFLEX_IO_TPUT_UNIT_KEY_H
#define PFLEX_IO_TPUT_UNIT_KEY_H

#include "pflex/runs.h"

/* The key of unit: "tokens_per_s", "samples_per_s", "steps_per_s" or "per_step_time". */
const char *pflex__tput_unit_key(enum pflex_tput_unit unit);

/* Parses a key written by pflex__tput_unit_key: 0, or -EINVAL when unknown. */
int pflex__tput_unit_from_key(const char *key, enum pflex_tput_unit *ret_unit);

#endif
