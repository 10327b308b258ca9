/* Internal to the io layer: what the runs readers share (runs_csv.c, runs_json.c). */
#ifndef PFLEX_IO_RUNS_INTERNAL_H
#define PFLEX_IO_RUNS_INTERNAL_H

#include <stdbool.h>

#include "pflex/runs.h"

/* True when name is a column the runs CSV interprets in a runset of this unit:
 * a known column, or the unit's throughput or SD column. Such a name cannot
 * be an extra column too (the CSV export would name it twice). */
bool pflex__runs_column_reserved(const char *name, enum pflex_tput_unit unit);

#endif
