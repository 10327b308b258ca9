/* The controller's HTTP API (api.h). */
#include "controller/api.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "controller/log.h"

struct ctl_api {
  struct MHD_Daemon *d;
  struct ctl_controller *c;
};

struct request {
  char *body;
  size_t len;
  bool too_large;
};

static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned status, char *text,
                                 const char *type) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(text);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", type);
  enum MHD_Result ok = MHD_queue_response(conn, status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result send_json(struct MHD_Connection *conn, unsigned status, json_t *o) {
  char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  if (!s) return MHD_NO;
  return send_text(conn, status, s, "application/json");
}

static enum MHD_Result send_error(struct ctl_api *api, struct MHD_Connection *conn, unsigned status,
                                  const char *field, const char *msg) {
  __atomic_add_fetch(&api->c->api_errors, 1, __ATOMIC_RELAXED);
  json_t *o = json_pack("{s:s}", "error", msg);
  if (o && field) json_object_set_new(o, "field", json_string(field));
  return send_json(conn, status, o);
}

static bool authorized(struct ctl_api *api, struct MHD_Connection *conn) {
  const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
  return agent_auth_bearer_ok(&api->c->api_token, h);
}

static char *copy_snapshot(struct ctl_controller *c, bool metrics) {
  pthread_mutex_lock(&c->lock);
  const char *s = metrics ? c->metrics_text : c->status_json;
  char *copy = strdup(s ? s : (metrics ? "" : "{\"round\":0}"));
  pthread_mutex_unlock(&c->lock);
  return copy;
}

static enum MHD_Result get_events(struct ctl_api *api, struct MHD_Connection *conn) {
  struct ctl_event *v;
  size_t n;
  double now = ctl_epoch_now();
  pthread_mutex_lock(&api->c->lock);
  int rc = ctl_store_events(api->c->store, true, now, &v, &n);
  pthread_mutex_unlock(&api->c->lock);
  if (rc < 0) return send_error(api, conn, 500, NULL, "cannot read the events");
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, ctl_event_to_json(&v[i], now));
  free(v);
  return send_json(conn, 200, json_pack("{s:o}", "events", a));
}

static enum MHD_Result post_event(struct ctl_api *api, struct MHD_Connection *conn,
                                  struct request *rq) {
  struct ctl_event e;
  struct ctl_field_error fe;
  double now = ctl_epoch_now();
  int rc = ctl_event_parse_body(rq->body, rq->len, now, &e, &fe);
  if (rc < 0) return send_error(api, conn, (unsigned)fe.status, fe.field, fe.message);
  if (ctl_controller_add_event(api->c, &e) < 0)
    return send_error(api, conn, 500, NULL, "cannot store the event");
  ctl_log("note", "event %lld added over the API", (long long)e.id);
  return send_json(conn, 201, ctl_event_to_json(&e, now));
}

static enum MHD_Result delete_event(struct ctl_api *api, struct MHD_Connection *conn,
                                    const char *arg) {
  char *end;
  errno = 0;
  long long id = strtoll(arg, &end, 10);
  if (errno || end == arg || *end || id <= 0)
    return send_error(api, conn, 400, "id", "the event id in the path must be a positive integer");
  struct ctl_event e;
  double now = ctl_epoch_now();
  int rc = ctl_controller_end_event(api->c, id, now, &e);
  if (rc == -ENOENT) return send_error(api, conn, 404, "id", "no such event");
  if (rc == -EALREADY) return send_error(api, conn, 409, "id", "the event is already over");
  if (rc < 0) return send_error(api, conn, 500, NULL, "cannot store the event");
  ctl_log("note", "event %lld %s over the API", id,
          ctl_event_state_at(&e, now) == CTL_EVENT_CANCELLED ? "cancelled" : "ended");
  return send_json(conn, 200, ctl_event_to_json(&e, now));
}

/* The routes: method, path (a trailing '/' takes an argument), write, handler id. */
enum route_id { R_HEALTH, R_STATUS, R_METRICS, R_EVENTS_GET, R_EVENTS_POST, R_EVENT_DELETE };
static const struct {
  const char *method, *path;
  bool write;
  enum route_id id;
} ROUTES[] = {
    {"GET", "/v1/health", false, R_HEALTH},      {"GET", "/v1/status", false, R_STATUS},
    {"GET", "/metrics", false, R_METRICS},       {"GET", "/v1/events", false, R_EVENTS_GET},
    {"POST", "/v1/events", true, R_EVENTS_POST}, {"DELETE", "/v1/events/", true, R_EVENT_DELETE},
};
#define NROUTES (sizeof ROUTES / sizeof ROUTES[0])

static int match(const char *method, const char *url, const char **ret_arg, bool *ret_path_ok) {
  *ret_path_ok = false;
  for (size_t i = 0; i < NROUTES; i++) {
    size_t n = strlen(ROUTES[i].path);
    bool prefix = ROUTES[i].path[n - 1] == '/';
    bool hit =
        prefix ? strncmp(url, ROUTES[i].path, n) == 0 && url[n] : strcmp(url, ROUTES[i].path) == 0;
    if (!hit) continue;
    *ret_path_ok = true;
    if (strcmp(method, ROUTES[i].method) == 0) {
      *ret_arg = prefix ? url + n : "";
      return (int)i;
    }
  }
  return -1;
}

static enum MHD_Result dispatch(struct ctl_api *api, struct MHD_Connection *conn, int r,
                                const char *arg, struct request *rq) {
  struct ctl_controller *c = api->c;
  switch (ROUTES[r].id) {
  case R_HEALTH: {
    /* Both under the lock: discovery from Slurm swaps the nodes under it. */
    pthread_mutex_lock(&c->lock);
    json_int_t rounds = (json_int_t)c->rounds_done, nodes = (json_int_t)c->nnodes;
    pthread_mutex_unlock(&c->lock);
    return send_json(conn, 200,
                     json_pack("{s:s, s:I, s:I}", "status", "ok", "nodes", nodes, "round", rounds));
  }
  case R_STATUS: return send_text(conn, 200, copy_snapshot(c, false), "application/json");
  case R_METRICS: return send_text(conn, 200, copy_snapshot(c, true), "text/plain; version=0.0.4");
  case R_EVENTS_GET: return get_events(api, conn);
  case R_EVENTS_POST: return post_event(api, conn, rq);
  case R_EVENT_DELETE: return delete_event(api, conn, arg);
  }
  return MHD_NO;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **state) {
  struct ctl_api *api = cls;
  struct request *rq = *state;
  if (!rq) {
    rq = calloc(1, sizeof *rq);
    if (!rq) return MHD_NO;
    *state = rq;
    return MHD_YES;
  }
  if (*size) { /* a piece of the body */
    if (rq->len + *size > CTL_API_MAX_BODY) {
      rq->too_large = true;
    } else {
      char *p = realloc(rq->body, rq->len + *size + 1);
      if (!p) return MHD_NO;
      rq->body = p;
      memcpy(rq->body + rq->len, data, *size);
      rq->len += *size;
      rq->body[rq->len] = '\0';
    }
    *size = 0;
    return MHD_YES;
  }
  __atomic_add_fetch(&api->c->api_requests, 1, __ATOMIC_RELAXED);
  if (rq->too_large) return send_error(api, conn, 413, "", "request body over 64 KiB");
  const char *arg;
  bool path_ok;
  int r = match(method, url, &arg, &path_ok);
  if (r < 0)
    return send_error(api, conn, path_ok ? 405 : 404, NULL,
                      path_ok ? "method not allowed on this path" : "no such path");
  bool need = ROUTES[r].write || api->c->cfg.read_auth == CTL_READ_TOKEN;
  if (need && !authorized(api, conn))
    return send_error(api, conn, 401, "Authorization", "a valid bearer token is required");
  return dispatch(api, conn, r, arg, rq);
}

static void on_done(void *cls, struct MHD_Connection *conn, void **state,
                    enum MHD_RequestTerminationCode toe) {
  struct request *rq = *state;
  if (rq) {
    free(rq->body);
    free(rq);
  }
  *state = NULL;
}

static int parse_listen(const char *s, struct sockaddr_in *sa, char *err, size_t errlen) {
  char host[128];
  const char *colon = strrchr(s, ':');
  char *end;
  long port = colon ? strtol(colon + 1, &end, 10) : -1;
  if (!colon || (size_t)(colon - s) >= sizeof host || *end || port < 1 || port > 65535) {
    snprintf(err, errlen, "listen: '%s' is not HOST:PORT (IPv4)", s);
    return -EINVAL;
  }
  memcpy(host, s, (size_t)(colon - s));
  host[colon - s] = '\0';
  memset(sa, 0, sizeof *sa);
  sa->sin_family = AF_INET;
  sa->sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
    snprintf(err, errlen, "listen: '%s' is not an IPv4 address", host);
    return -EINVAL;
  }
  return 0;
}

int ctl_api_start(struct ctl_controller *c, struct ctl_api **ret, char *err, size_t errlen) {
  struct sockaddr_in sa;
  int rc = parse_listen(c->cfg.listen, &sa, err, errlen);
  if (rc < 0) return rc;
  struct ctl_api *api = calloc(1, sizeof *api);
  if (!api) return -ENOMEM;
  api->c = c;
  api->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL,
                            on_request, api, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                            MHD_OPTION_NOTIFY_COMPLETED, on_done, api, MHD_OPTION_CONNECTION_LIMIT,
                            256u, MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
  if (!api->d) {
    free(api);
    snprintf(err, errlen, "cannot listen on '%s' (in use, or not an address of this host)",
             c->cfg.listen);
    return -EADDRINUSE;
  }
  *ret = api;
  return 0;
}

void ctl_api_stop(struct ctl_api *api) {
  if (!api) return;
  MHD_stop_daemon(api->d);
  free(api);
}
