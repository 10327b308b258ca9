/* The progress callback of long library calls (include/pflex/progress.h). */
#include "pflex/progress.h"

void pflex_progress_report(const struct pflex_progress *p, const char *what, size_t done,
                           size_t total) {
  if (p && p->report) p->report(p->ctx, what, done, total);
}
