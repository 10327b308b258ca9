/* The progress line on stderr (src/cli/progress.h). */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cli/progress.h"

#define PROGRESS_PERIOD_S 0.1 /* at most 10 redraws a second: a terminal is slow */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void cli_progress_init(struct cli_progress *pr, const char *label, bool quiet) {
  *pr = (struct cli_progress){.on = !quiet && isatty(STDERR_FILENO), .label = label};
  pr->start_s = now_s();
  pr->last_s = pr->start_s - 2 * PROGRESS_PERIOD_S; /* the first update draws */
}

static void report(void *ctx, const char *what, size_t done, size_t total) {
  cli_progress_update(ctx, what, done, total);
}

struct pflex_progress cli_progress_hook(struct cli_progress *pr) {
  return (struct pflex_progress){.report = report, .ctx = pr};
}

/* Whether to draw now; true also records the time. */
static bool due(struct cli_progress *pr, bool force) {
  if (!pr->on) return false;
  double t = now_s();
  if (!force && t - pr->last_s < PROGRESS_PERIOD_S) return false;
  pr->last_s = t;
  return true;
}

void cli_progress_update(struct cli_progress *pr, const char *what, size_t done, size_t total) {
  if (!due(pr, total > 0 && done >= total)) return;
  double elapsed = pr->last_s - pr->start_s;
  if (total > 0 && done > 0 && done < total && elapsed >= 1)
    fprintf(stderr, "\r\033[K%s: %s %zu/%zu (%zu%%), %.0f s, about %.0f s left", pr->label, what,
            done, total, (size_t)(100.0 * (double)done / (double)total), elapsed,
            elapsed * (double)(total - done) / (double)done);
  else if (total > 0) /* the percentage rounded down: 100% only when done */
    fprintf(stderr, "\r\033[K%s: %s %zu/%zu (%zu%%), %.0f s", pr->label, what, done, total,
            (size_t)(100.0 * (double)done / (double)total), elapsed);
  else
    fprintf(stderr, "\r\033[K%s: %s %zu, %.0f s", pr->label, what, done, elapsed);
  fflush(stderr);
  pr->line_open = true;
}

void cli_progress_printf(struct cli_progress *pr, bool force, const char *fmt, ...) {
  if (!due(pr, force)) return;
  fputs("\r\033[K", stderr);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fflush(stderr);
  pr->line_open = true;
}

void cli_progress_clear(struct cli_progress *pr) {
  if (!pr->line_open) return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
  pr->line_open = false;
}
