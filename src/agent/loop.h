/* The agent's event loop: one thread, one poll over the signal fd, the HTTP
 * listeners, the mapping directory and the StatsD socket, woken in time for
 * the next sample and the next lease deadline. */
#ifndef PFLEX_AGENT_LOOP_H
#define PFLEX_AGENT_LOOP_H

#include "agent/agent.h"
#include "agent/http.h"

/* Called about once a second (e.g. for the systemd watchdog). */
typedef void (*agent_tick_fn)(void *userdata);

/* Runs until SIGTERM, SIGINT or SIGQUIT arrives on sigfd (a signalfd with
 * those and SIGHUP); returns that signal. SIGHUP re-reads the token file. */
int agent_loop_run(struct agent *a, struct agent_http *h, int sigfd, agent_tick_fn tick,
                   void *userdata);

#endif
