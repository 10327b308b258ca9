/* Notes on groups whose reference run is not at their GPU's default limit
 * (src/cli/reference_notes.h). */
#include <errno.h>
#include <stdio.h>

#include "cli/reference_notes.h"
#include "pflex/reference.h"

/* Notes beyond this many groups are counted, not printed: a file of 40,000
 * groups of an unknown GPU must not flood the terminal. */
#define NOTES_MAX 5

static int group_note(const struct pflex_runset *set, const struct pflex_group *g, char *buf,
                      size_t size) {
  struct pflex_reference ref;
  pflex_group_reference(set, g, &ref);
  return pflex_reference_note(&ref, g->name, set->runs[g->uncapped].gpu, buf, size);
}

void cli_reference_notes_print(const struct pflex_runset *set,
                               const struct pflex_runs_read_opts *opts) {
  if (opts && opts->reference_cap_w > 0)
    fprintf(stderr,
            "note: --reference-cap %g: runs above %g W are left out; each group's run at %g W "
            "is its reference (uncapped) run\n",
            opts->reference_cap_w, opts->reference_cap_w, opts->reference_cap_w);
  struct pflex_group *g = NULL;
  size_t ng = 0, shown = 0, more = 0;
  if (pflex_runset_groups(set, &g, &ng))
    return; /* out of memory: the notes are lost, not the run */
  for (size_t j = 0; j < ng; j++) {
    char note[512];
    if (group_note(set, &g[j], note, sizeof note)) continue;
    if (shown < NOTES_MAX) {
      fprintf(stderr, "note: %s\n", note);
      shown++;
    } else {
      more++;
    }
  }
  if (more)
    fprintf(stderr, "note: %zu more group(s) whose reference run is their highest cap, likewise\n",
            more);
  pflex_groups_free(g, ng);
}

int cli_reference_note_json(json_t *obj, const struct pflex_runset *set,
                            const struct pflex_group *g) {
  char note[512];
  if (group_note(set, g, note, sizeof note)) return 0;
  return json_object_set_new(obj, "reference_note", json_string(note)) ? -ENOMEM : 0;
}
