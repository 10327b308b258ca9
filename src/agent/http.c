/* libmicrohttpd glue (http.h): body collection with a size limit, the
 * authentication rule, JSON replies. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "agent/http.h"
#include "agent/listen.h"
#include "agent/log.h"
#include "agent/routes.h"

struct req_ctx {
  const struct agent_route *route;
  const char *arg;
  char *body;
  size_t len, cap;
  bool too_large;
};

static enum MHD_Result send_reply(struct agent *a, struct MHD_Connection *c, struct agent_reply *rp,
                                  const char *allow) {
  char *buf = rp->text;
  size_t len = rp->text_len;
  if (!buf) {
    /* 15 digits: every reading (mW, mJ) and time exactly as a decimal, where
     * jansson's default 17 prints 448.19999999999999 and costs the agent
     * (and the controller's parse) about twice as much per number. */
    buf = rp->json ? json_dumps(rp->json, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    len = buf ? strlen(buf) : 0;
  }
  json_decref(rp->json);
  struct MHD_Response *r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
  if (!r) return free(buf), MHD_NO;
  MHD_add_response_header(r, "Content-Type",
                          rp->content_type ? rp->content_type : "application/json");
  MHD_add_response_header(r, "Cache-Control", "no-store");
  if (allow) MHD_add_response_header(r, "Allow", allow);
  if (rp->status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
  a->c.requests++;
  if (rp->status >= 400) agent_count_error(a, rp->status);
  enum MHD_Result ok = MHD_queue_response(c, (unsigned)rp->status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result send_error(struct agent *a, struct MHD_Connection *c, int status,
                                  const char *field, const char *msg, const char *allow) {
  struct agent_reply rp = {0};
  agent_reply_error(&rp, status, field, msg);
  return send_reply(a, c, &rp, allow);
}

/* The checks made before any body is read: route, token, declared size. */
static enum MHD_Result first_call(struct agent_listener *l, struct MHD_Connection *c,
                                  const char *url, const char *method, struct req_ctx *rc) {
  char allow[64];
  switch (agent_route_find(method, url, &rc->route, &rc->arg, allow, sizeof allow)) {
  case AGENT_ROUTE_NO_PATH: return send_error(l->a, c, 404, "", "no such path", NULL);
  case AGENT_ROUTE_NO_METHOD: return send_error(l->a, c, 405, "", "method not allowed", allow);
  case AGENT_ROUTE_FOUND: break;
  }
  bool needs_token = l->tcp && (rc->route->write || l->a->cfg.read_auth);
  const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  if (needs_token && !agent_auth_bearer_ok(&l->a->token, auth))
    return send_error(l->a, c, 401, "",
                      auth ? "invalid bearer token"
                           : "needs Authorization: "
                             "Bearer <token>",
                      NULL);
  const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
  if (cl && strtoull(cl, NULL, 10) > l->a->cfg.max_body) rc->too_large = true;
  return MHD_YES;
}

static void take_body(struct req_ctx *rc, const char *data, size_t n, size_t max) {
  if (rc->too_large) return;
  if (rc->len + n > max) {
    rc->too_large = true;
    free(rc->body);
    rc->body = NULL;
    return;
  }
  if (rc->len + n + 1 > rc->cap) {
    size_t cap = rc->len + n + 1 > 2 * rc->cap ? rc->len + n + 1 : 2 * rc->cap;
    char *b = realloc(rc->body, cap);
    if (!b) {
      rc->too_large = true; /* answered like an oversized body: nothing applied */
      return;
    }
    rc->body = b;
    rc->cap = cap;
  }
  memcpy(rc->body + rc->len, data, n);
  rc->len += n;
  rc->body[rc->len] = '\0';
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
  struct agent_listener *l = cls;
  struct req_ctx *rc = *con_cls;
  if (!rc) {
    if (!(rc = calloc(1, sizeof *rc))) return MHD_NO;
    *con_cls = rc;
    return first_call(l, c, url, method, rc);
  }
  if (!rc->route) return MHD_NO; /* answered already */
  if (*upload_size) {
    take_body(rc, upload, *upload_size, l->a->cfg.max_body);
    *upload_size = 0;
    return MHD_YES;
  }
  if (rc->too_large) {
    char msg[96];
    snprintf(msg, sizeof msg, "request body over %u bytes (max_body)", l->a->cfg.max_body);
    return send_error(l->a, c, 413, "", msg, NULL);
  }
  struct agent_request rq = {method, url, rc->arg, rc->body ? rc->body : "", rc->len};
  struct agent_reply rp = {0};
  rc->route->fn(l->a, &rq, &rp);
  if (!rp.status) agent_reply_error(&rp, 500, "", "no reply");
  return send_reply(l->a, c, &rp, NULL);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  struct req_ctx *rc = *con_cls;
  if (rc) free(rc->body);
  free(rc);
  *con_cls = NULL;
}

static int start_daemon(struct agent_listener *l, struct agent *a, bool tcp, int fd) {
  l->a = a;
  l->tcp = tcp;
  l->d = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, l,
                          MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
                          NULL, MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_CONNECTION_LIMIT,
                          64u, MHD_OPTION_END);
  if (!l->d) {
    agent_log("error", "cannot start the HTTP server (libmicrohttpd)");
    return -EIO;
  }
  return 0;
}

int agent_http_start(struct agent_http *h, struct agent *a) {
  memset(h, 0, sizeof *h);
  int fd, err;
  if (a->cfg.socket[0]) {
    if ((err = agent_listen_unix(a->cfg.socket, a->cfg.socket_group, &fd, &h->sock_dev,
                                 &h->sock_ino)))
      return err;
    snprintf(h->socket_path, sizeof h->socket_path, "%s", a->cfg.socket);
    if ((err = start_daemon(&h->unix_l, a, false, fd))) return agent_http_stop(h), err;
  }
  if (a->cfg.listen[0]) {
    if ((err = agent_listen_tcp(a->cfg.listen, &fd))) return agent_http_stop(h), err;
    if (!a->cfg.read_auth && !agent_listen_is_loopback(fd))
      agent_log("warning", "listening beyond loopback with read_auth = false: anyone who reaches "
                           "'%s' reads this node's GPUs, jobs and throughput (writes still need "
                           "the token); set read_auth = true, or firewall the port",
                a->cfg.listen);
    if ((err = start_daemon(&h->tcp_l, a, true, fd))) return agent_http_stop(h), err;
  }
  return 0;
}

void agent_http_stop(struct agent_http *h) {
  if (h->unix_l.d) MHD_stop_daemon(h->unix_l.d);
  if (h->tcp_l.d) MHD_stop_daemon(h->tcp_l.d);
  h->unix_l.d = h->tcp_l.d = NULL;
  if (h->socket_path[0]) agent_unlink_socket(h->socket_path, h->sock_dev, h->sock_ino);
  h->socket_path[0] = '\0';
}

int agent_http_fds(const struct agent_http *h, int *fds, long *ret_timeout_ms) {
  int n = 0;
  long timeout = -1;
  const struct agent_listener *ls[2] = {&h->unix_l, &h->tcp_l};
  for (int k = 0; k < 2; k++) {
    if (!ls[k]->d) continue;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(ls[k]->d, MHD_DAEMON_INFO_EPOLL_FD);
    if (info) fds[n++] = info->epoll_fd;
    MHD_UNSIGNED_LONG_LONG t;
    if (MHD_get_timeout(ls[k]->d, &t) == MHD_YES && (timeout < 0 || (long)t < timeout))
      timeout = (long)t;
  }
  *ret_timeout_ms = timeout;
  return n;
}

void agent_http_run(struct agent_http *h) {
  if (h->unix_l.d) MHD_run(h->unix_l.d);
  if (h->tcp_l.d) MHD_run(h->tcp_l.d);
}
