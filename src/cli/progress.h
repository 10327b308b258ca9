/* The one progress printer of pflex's long commands (study, sweep, import,
 * pfi): one line on stderr, overwritten in place ("\r" and erase to the end
 * of the line), at most 10 times a second, cleared when the work ends or
 * anything else is printed. Only when stderr is a terminal: redirected to a
 * file or a pipe it prints nothing (docs/design.md). */
#ifndef PFLEX_CLI_PROGRESS_H
#define PFLEX_CLI_PROGRESS_H

#include <stdbool.h>

#include "pflex/progress.h"

struct cli_progress {
  bool on;                /* stderr is a terminal and the command was not asked to be quiet */
  bool line_open;         /* a progress line is on the screen */
  const char *label;      /* the command ("study"), first on the line */
  double start_s, last_s; /* monotonic clock: when the work began, when last drawn */
};

/* Starts the printer for the command named label (a static string); quiet
 * turns it off. Nothing is printed yet. */
void cli_progress_init(struct cli_progress *pr, const char *label, bool quiet);

/* The hook a library call takes (its report calls cli_progress_update). */
struct pflex_progress cli_progress_hook(struct cli_progress *pr);

/* "label: what done/total (P%), S s[, about R s left]" (or "what done"
 * when total is 0; P rounded down, so 100% means done),
 * unless the line was drawn less than 0.1 s ago (the last unit, done ==
 * total, is always drawn). */
void cli_progress_update(struct cli_progress *pr, const char *what, size_t done, size_t total);

/* A line of the caller's own text, rate-limited the same way unless force. */
void cli_progress_printf(struct cli_progress *pr, bool force, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Erases the progress line, if one is shown (call before printing anything
 * else on stderr, and at the end). */
void cli_progress_clear(struct cli_progress *pr);

#endif
