/* Progress of long library calls (a study, an import): the library says how
 * far it is through a callback the program gives, and never prints; the
 * program decides whether and how to show it (pflex: one line on stderr when
 * it is a terminal, src/cli/progress.c). */
#ifndef PFLEX_PROGRESS_H
#define PFLEX_PROGRESS_H

#include <stddef.h>

struct pflex_progress {
  /* Called with what is being done ("workloads", "groups"), how many of
   * total units are done (total 0: not known). May be called often, from the
   * caller's thread only: the program rate-limits what it shows. NULL: none. */
  void (*report)(void *ctx, const char *what, size_t done, size_t total);
  void *ctx;
};

/* Calls p->report(p->ctx, what, done, total) when p and its report are set. */
void pflex_progress_report(const struct pflex_progress *p, const char *what, size_t done,
                           size_t total);

#endif
