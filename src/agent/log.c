/* Clock and log lines (log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "agent/log.h"

double agent_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void agent_log(const char *level, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: %s\n", level, line);
}
