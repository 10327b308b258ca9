/* The controller's HTTP API (libmicrohttpd, its own thread), JSON:
 *   GET    /v1/health          {"status":"ok","nodes":N,"round":R}
 *   GET    /v1/status          the last round's snapshot
 *   GET    /v1/events          {"events":[...]} every event in the store
 *   POST   /v1/events          a new event (events.h) -> 201 with the event
 *   DELETE /v1/events/{id}     ends it early -> 200 with the event
 *   GET    /metrics            Prometheus text
 * Writes need "Authorization: Bearer <token>" (token_file), compared in
 * constant time; reads too when read_auth = token. Bodies over 64 KiB: 413.
 * Errors are {"error": "...", "field": "..."} with a 4xx status, and
 * nothing is applied. */
#ifndef CTL_API_H
#define CTL_API_H

#include <stddef.h>

#include "controller/controller.h"

struct ctl_api;

/* Listens on cfg.listen (HOST:PORT; loopback or any address the operator
 * names). -EINVAL/-EADDRINUSE with err. */
int ctl_api_start(struct ctl_controller *c, struct ctl_api **ret, char *err, size_t errlen);
void ctl_api_stop(struct ctl_api *api);

#define CTL_API_MAX_BODY 65536

#endif
