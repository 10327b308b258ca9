/* Saying which run is each group's reference (uncapped) run when it is not
 * the run at its GPU's default limit (include/pflex/reference.h): notes on
 * stderr where the runs are read, a "reference_note" field in JSON. */
#ifndef PFLEX_CLI_REFERENCE_NOTES_H
#define PFLEX_CLI_REFERENCE_NOTES_H

#include <jansson.h>

#include "pflex/runs.h"
#include "pflex/runs_csv.h"

/* Prints "note: ..." lines on stderr for the groups of set whose reference
 * run is not at their GPU's default limit (the first few, then how many
 * more), and what --reference-cap (opts->reference_cap_w) did. */
void cli_reference_notes_print(const struct pflex_runset *set,
                               const struct pflex_runs_read_opts *opts);

/* Sets "reference_note" on obj when group g's reference run needs one; 0 or
 * -ENOMEM. */
int cli_reference_note_json(json_t *obj, const struct pflex_runset *set,
                            const struct pflex_group *g);

#endif
