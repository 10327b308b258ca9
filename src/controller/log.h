/* The controller's log lines on stderr: "LEVEL: message", one line each
 * (journald adds the time under systemd). */
#ifndef CTL_LOG_H
#define CTL_LOG_H

void ctl_log(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
