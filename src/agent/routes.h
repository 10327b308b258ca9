/* The API: one table of routes (method, path, whether it writes, handler).
 * Handlers take a parsed request and fill a reply; the HTTP layer (http.c)
 * does transport, size limits and authentication. */
#ifndef PFLEX_AGENT_ROUTES_H
#define PFLEX_AGENT_ROUTES_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "agent/agent.h"

struct agent_request {
  const char *method, *path;
  const char *arg; /* for a prefix route: the rest of the path (e.g. the job id) */
  const char *body;
  size_t len;
};

struct agent_reply {
  int status;
  json_t *json;      /* a JSON reply, or */
  char *text;        /* a text one (malloc'd), of text_len bytes */
  size_t text_len;
  const char *content_type;
};

typedef void (*agent_handler)(struct agent *a, const struct agent_request *rq,
                              struct agent_reply *rp);

struct agent_route {
  const char *method;
  const char *path;
  bool prefix; /* path is a prefix; the rest is rq->arg */
  bool write;  /* changes something: over TCP it needs the token */
  agent_handler fn;
};

enum agent_route_match { AGENT_ROUTE_FOUND, AGENT_ROUTE_NO_PATH, AGENT_ROUTE_NO_METHOD };

/* Finds the route of method and path; for AGENT_ROUTE_NO_METHOD, allow
 * receives the methods the path has ("GET, PUT"). */
enum agent_route_match agent_route_find(const char *method, const char *path,
                                        const struct agent_route **ret, const char **ret_arg,
                                        char *allow, size_t allowlen);

/* Fills rp with status and {"error": message, "field": field} ("" field:
 * left out). */
void agent_reply_error(struct agent_reply *rp, int status, const char *field, const char *message);

#endif
