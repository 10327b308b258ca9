/* pflexd's clock and log lines. */
#ifndef PFLEX_AGENT_LOG_H
#define PFLEX_AGENT_LOG_H

/* CLOCK_MONOTONIC seconds. */
double agent_now(void);

/* One line to stderr (the journal under systemd): "LEVEL: message", LEVEL
 * being error, warning or note. */
void agent_log(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
