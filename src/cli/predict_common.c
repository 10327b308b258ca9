/* Helpers shared by the prediction commands (predict_common.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/predict_common.h"
#include "cli/util.h"

int pc_dataset(const struct pflex_runset *set, const char *set_filter, const char *spec,
               bool need_target, struct pflex_dataset *ret) {
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  struct pflex_featlist none, feats;
  pflex_featlist_init(&none);
  pflex_featlist_init(&feats);
  /* First the groups alone, for the uncapped runs `dcgm` looks at. */
  struct pflex_dataset groups;
  int err = pflex_dataset_build(set, set_filter, &none, need_target, &groups, &diag);
  if (!err) {
    err = pflex_featlist_parse(spec, set, groups.uncapped, groups.n, &feats, &diag);
    pflex_dataset_release(&groups);
  }
  if (!err) err = pflex_dataset_build(set, set_filter, &feats, need_target, ret, &diag);
  pflex_featlist_release(&feats);
  if (err) {
    char buf[1024];
    pflex_diag_format(&diag, buf, sizeof buf);
    cli_error("%s", diag.message[0] ? buf : pflex_strerror(err));
  }
  return err;
}

void pc_num(FILE *f, int w, double v) {
  if (isfinite(v))
    fprintf(f, "%*.3f", w, v);
  else
    fprintf(f, "%*s", w, "-");
}

void pc_csv_field(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}
