/* The API's transport: libmicrohttpd on a Unix socket (mode 0660, group
 * configurable; who may connect is decided by the file's mode) and
 * optionally on TCP (writes, and reads when read_auth is set, need the
 * bearer token). Runs inside the agent's own poll loop: no threads. */
#ifndef PFLEX_AGENT_HTTP_H
#define PFLEX_AGENT_HTTP_H

#include <stdbool.h>
#include <sys/types.h>

#include "agent/agent.h"

struct MHD_Daemon;

struct agent_listener {
  struct agent *a;
  bool tcp;
  struct MHD_Daemon *d;
};

struct agent_http {
  struct agent_listener unix_l, tcp_l;
  char socket_path[AGENT_PATH_MAX];
  dev_t sock_dev; /* the socket file we made: removed at exit only if it is still ours */
  ino_t sock_ino;
};

/* Starts the listeners the configuration names. On failure logs why. */
int agent_http_start(struct agent_http *h, struct agent *a);

/* Stops them and removes the socket file. Accepts a never-started h. */
void agent_http_stop(struct agent_http *h);

/* The fds to poll for POLLIN (up to 2) and the longest wait in ms (-1:
 * none) that libmicrohttpd allows; returns the number of fds. */
int agent_http_fds(const struct agent_http *h, int *fds, long *ret_timeout_ms);

/* Lets libmicrohttpd do whatever is ready (accept, read, answer). */
void agent_http_run(struct agent_http *h);

#endif
