/* The agent's event loop: one thread, one poll over the signal fd, the HTTP
 * listeners, the mapping directory and the StatsD socket, woken in time for
 * the next sample and the next lease deadline. */
#ifndef PFLEX_AGENT_LOOP_H
#define PFLEX_AGENT_LOOP_H

#include "agent/agent.h"
#include "agent/http.h"

/* Milliseconds (0-1000) until the next thing the agent must do by itself
 * (a sample, a lease deadline), or http_ms (libmicrohttpd's wait, -1: none)
 * when that is sooner. */
int agent_wait_ms(const struct agent *a, double now, long http_ms);

/* Does what is due at `now`: the sample tick, lease expiries, the mapping
 * directory, StatsD, the HTTP listeners. A process hosting several agents
 * (a simulated cluster) polls all their fds and calls this for each. */
void agent_step(struct agent *a, struct agent_http *h, double now);

/* Called about once a second (e.g. for the systemd watchdog). */
typedef void (*agent_tick_fn)(void *userdata);

/* Runs until SIGTERM, SIGINT or SIGQUIT arrives on sigfd (a signalfd with
 * those and SIGHUP); returns that signal. SIGHUP re-reads the token file. */
int agent_loop_run(struct agent *a, struct agent_http *h, int sigfd, agent_tick_fn tick,
                   void *userdata);

#endif
