/* Tests of the reference run (include/pflex/reference.h): which kind of
 * reference each group's highest-cap run is, the notes, and the check of a
 * chosen reference cap. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "pflex/reference.h"

static struct pflex_run run(const char *group, const char *gpu, double cap, double p, double t) {
  return (struct pflex_run){
      .group = (char *)group, .gpu = (char *)gpu, .gpus = 8, .cap_w = cap, .power_w = p, .tput = t};
}

static void test_kinds_and_notes(void **state) {
  (void)state;
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_run r[] = {run("h", "H200", 700, 5000, 100),  run("h", "H200", 300, 2300, 70),
                          run("a", "A100", 300, 2300, 70),   run("a", "A100", 200, 1500, 50),
                          run("x", "MI300X", 750, 5800, 90), run("x", "MI300X", 300, 2300, 40)};
  for (size_t i = 0; i < 6; i++)
    assert_int_equal(pflex_runset_append(&set, &r[i]), 0);
  struct pflex_group *g;
  size_t ng;
  assert_int_equal(pflex_runset_groups(&set, &g, &ng), 0);
  assert_int_equal(ng, 3);
  struct pflex_reference ref;
  char note[300];
  pflex_group_reference(&set, &g[0], &ref);
  assert_int_equal(ref.kind, PFLEX_REFERENCE_DEFAULT);
  assert_float_equal(ref.default_w, 700, 0);
  assert_int_equal(pflex_reference_note(&ref, "h", "H200", note, sizeof note), -ENOENT);
  pflex_group_reference(&set, &g[1], &ref);
  assert_int_equal(ref.kind, PFLEX_REFERENCE_BELOW_DEFAULT);
  assert_float_equal(ref.cap_w, 300, 0);
  assert_float_equal(ref.default_w, 400, 0);
  assert_int_equal(pflex_reference_note(&ref, "a", "A100", note, sizeof note), 0);
  assert_string_equal(note, "group 'a': no run at the A100's 400 W default limit: its highest "
                            "cap, 300 W, is the reference (uncapped) run");
  pflex_group_reference(&set, &g[2], &ref);
  assert_int_equal(ref.kind, PFLEX_REFERENCE_UNKNOWN_GPU);
  assert_true(isnan(ref.default_w));
  assert_int_equal(pflex_reference_note(&ref, "x", "MI300X", note, sizeof note), 0);
  assert_non_null(strstr(note, "GPU type 'MI300X' is not in pflex's GPU table: its highest cap, "
                               "750 W, is the reference"));
  pflex_groups_free(g, ng);

  /* a chosen reference cap: every group needs a run at it, none above */
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  assert_int_equal(pflex_runset_check_reference(&set, 300, &diag), -PFLEX_E_DATA);
  assert_non_null(strstr(diag.message, "group 'h' has no run at the reference cap 300 W (its "
                                       "highest cap is 700 W)"));
  pflex_runset_release(&set);
  pflex_runset_init(&set);
  for (size_t i = 1; i < 6; i += 2)
    assert_int_equal(pflex_runset_append(&set, &r[i]), 0);
  set.runs[1].cap_w = 300.4; /* within PFLEX_REFERENCE_TOL_W */
  assert_int_equal(pflex_runset_check_reference(&set, 300, &diag), 0);
  pflex_runset_release(&set);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kinds_and_notes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
