/* pflex_runs_read_csv on arbitrary bytes, with a few option sets. What it
 * accepts must survive its own writer: the CSV that pflex_runs_write_csv_stream
 * makes of it reads back (same options but no set filter) into as many runs,
 * and (for units other than s_per_step, which inverts twice) writes the same
 * text again. */
#include "fuzz.h"

#include "pflex/runs.h"
#include "pflex/runs_csv.h"

/* fuzz-args: -max_len=8192 */

static const struct pflex_runs_read_opts option_sets[] = {
    {0},
    {.unit = PFLEX_TPUT_PER_STEP_TIME, .partial_groups = true},
    {.unit = PFLEX_TPUT_SAMPLES_PER_S, .set_filter = "headline"},
    {.tput_column = "tokens_per_s", .partial_groups = true},
};

/* The runset as CSV text (free() it), or NULL when the writer fails. */
static char *to_csv(const struct pflex_runset *set, size_t *ret_len) {
  char *text = NULL;
  FILE *f = open_memstream(&text, ret_len);
  if (!f) return NULL;
  int err = pflex_runs_write_csv_stream(set, f);
  fclose(f);
  if (err) {
    free(text);
    return NULL;
  }
  return text;
}

static void round_trip(const struct pflex_runset *set, const struct pflex_runs_read_opts *opts) {
  size_t len1, len2;
  char *text1 = to_csv(set, &len1);
  fuzz_check(text1 != NULL);
  struct pflex_runs_read_opts again = *opts;
  again.set_filter = NULL;
  again.unit = set->unit;
  struct pflex_runset set2;
  struct pflex_diag diag = {0};
  int err = pflex_runs_read_csv(fuzz_path((const uint8_t *)text1, len1), &again, &set2, &diag);
  if (err) fprintf(stderr, "re-read failed: %s (%s)\n", pflex_strerror(err), diag.message);
  fuzz_check(err == 0);
  fuzz_check(set2.n == set->n && set2.unit == set->unit && set2.nextra == set->nextra);
  char *text2 = to_csv(&set2, &len2);
  fuzz_check(text2 != NULL);
  if (set->unit != PFLEX_TPUT_PER_STEP_TIME)
    fuzz_check(len1 == len2 && memcmp(text1, text2, len1) == 0);
  free(text2);
  pflex_runset_release(&set2);
  free(text1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (size_t k = 0; k < sizeof option_sets / sizeof *option_sets; k++) {
    const char *path = fuzz_path(data, size);
    if (!path) return 0;
    struct pflex_runset set;
    struct pflex_diag diag = {0};
    pflex_runset_init(&set);
    int err = pflex_runs_read_csv(path, &option_sets[k], &set, &diag);
    fuzz_check(err < 0 || err == 0);
    if (err == 0) round_trip(&set, &option_sets[k]);
    pflex_runset_release(&set);
  }
  return 0;
}
