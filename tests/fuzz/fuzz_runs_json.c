/* pflex_runs_from_json (the runs JSON of pflex import/export) on arbitrary
 * text. What it accepts must round-trip: pflex_runs_to_json of it parses again
 * into the same JSON text. And what pflex import accepts from it (it also
 * passes pflex_runset_check_groups and has runs: a CSV cannot hold none) must be exportable as a runs CSV that
 * pflex_runs_read_csv reads back with as many runs (runs_json.c: "every JSON
 * import can be exported as CSV and read back"). */
#include "fuzz.h"

#include "pflex/runs.h"
#include "pflex/runs_csv.h"
#include "pflex/runs_json.h"
#include "pflex/runs_csv.h"

/* fuzz-args: -max_len=8192 */

static void csv_round_trip(const struct pflex_runset *set) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  fuzz_check(f != NULL);
  int err = pflex_runs_write_csv_stream(set, f);
  fclose(f);
  fuzz_check(err == 0);
  struct pflex_runs_read_opts opts = {.unit = set->unit, .partial_groups = true};
  struct pflex_runset back;
  struct pflex_diag diag = {0};
  err = pflex_runs_read_csv(fuzz_path((const uint8_t *)text, len), &opts, &back, &diag);
  if (err) fprintf(stderr, "CSV export does not read back: %s (line %zu, %s: %s)\n%s\n",
                   pflex_strerror(err), diag.line, diag.column, diag.message, text);
  fuzz_check(err == 0);
  fuzz_check(back.n == set->n);
  pflex_runset_release(&back);
  free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_cstr(data, size);
  if (!text) return 0;
  struct pflex_runset set;
  struct pflex_diag diag = {0};
  pflex_runset_init(&set);
  int err = pflex_runs_from_json(text, "fuzz.json", &set, &diag);
  fuzz_check(err <= 0);
  if (err == 0) {
    char *json1 = NULL, *json2 = NULL;
    fuzz_check(pflex_runs_to_json(&set, &json1) == 0);
    struct pflex_runset set2;
    pflex_runset_init(&set2);
    err = pflex_runs_from_json(json1, "again.json", &set2, &diag);
    if (err) fprintf(stderr, "re-read failed: %s\n%s\n", diag.message, json1);
    fuzz_check(err == 0);
    fuzz_check(pflex_runs_to_json(&set2, &json2) == 0);
    fuzz_check(strcmp(json1, json2) == 0);
    free(json1);
    free(json2);
    pflex_runset_release(&set2);
    if (set.n > 0 && pflex_runset_check_groups(&set, true, &diag) == 0) csv_round_trip(&set);
  }
  pflex_runset_release(&set);
  free(text);
  return 0;
}
