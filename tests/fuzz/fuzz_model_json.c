/* pflex_model_from_json (the model file of pflex fit / predict) on arbitrary
 * text: a model it accepts serializes with pflex_model_to_json into text that
 * parses again into the same text. */
#include "fuzz.h"

#include "pflex/model_json.h"

/* fuzz-args: -max_len=8192 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_cstr(data, size);
  if (!text) return 0;
  struct pflex_model m;
  struct pflex_diag diag = {0};
  pflex_model_init(&m);
  int err = pflex_model_from_json(text, "fuzz.json", &m, &diag);
  fuzz_check(err <= 0);
  if (err == 0) {
    char *json1 = NULL, *json2 = NULL;
    fuzz_check(pflex_model_to_json(&m, &json1) == 0);
    struct pflex_model m2;
    pflex_model_init(&m2);
    err = pflex_model_from_json(json1, "again.json", &m2, &diag);
    if (err) fprintf(stderr, "re-read failed: %s: %s\n%s\n", diag.column, diag.message, json1);
    fuzz_check(err == 0);
    fuzz_check(pflex_model_to_json(&m2, &json2) == 0);
    if (strcmp(json1, json2) != 0) fprintf(stderr, "first:\n%s\nsecond:\n%s\n", json1, json2);
    fuzz_check(strcmp(json1, json2) == 0);
    free(json1);
    free(json2);
    pflex_model_release(&m2);
  }
  pflex_model_release(&m);
  free(text);
  return 0;
}
