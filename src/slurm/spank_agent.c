/* HTTP to the local pflexd over its Unix socket (spank_agent.h). */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "spank_agent.h"
#include "spank_reply.h"

/* A job's entry in GET /v1/jobs is about 150 bytes: room for hundreds. */
#define REPLY_MAX 65536

struct reply {
  char buf[REPLY_MAX + 1];
  size_t len;
  bool truncated;
};

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg) {
  struct reply *r = arg;
  size_t n = size * nmemb, room = REPLY_MAX - r->len, take = n < room ? n : room;
  memcpy(r->buf + r->len, p, take);
  r->len += take;
  r->buf[r->len] = '\0';
  if (take < n) r->truncated = true;
  return n; /* the rest is read and dropped */
}

static int status_error(long status) {
  static const struct {
    long status;
    int err;
  } map[] = {{200, 0}, {404, -ENOENT}, {409, -EBUSY}};
  for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
    if (map[k].status == status) return map[k].err;
  return -EPROTO;
}

/* pflexd's socket is root's: one another user planted (or could replace,
 * in a directory they can write) never hears from the prolog. */
static int socket_trusted(const char *path, char *msg, size_t msglen) {
  struct stat st, dir;
  char parent[sizeof((struct pflex_spank_conf *)0)->socket];
  snprintf(parent, sizeof parent, "%s", path);
  char *slash = strrchr(parent, '/');
  if (slash) slash[slash == parent] = '\0'; /* "/x.sock" -> "/" */
  if (lstat(path, &st) != 0) {
    int err = errno;
    snprintf(msg, msglen, "pflexd at %s: %s", path, strerror(err));
    return -ECONNREFUSED;
  }
  bool dir_ok = stat(parent, &dir) == 0 && dir.st_uid == 0 &&
                (!(dir.st_mode & 022) || (dir.st_mode & S_ISVTX));
  if (!S_ISSOCK(st.st_mode) || st.st_uid != 0 || !dir_ok) {
    snprintf(msg, msglen,
             "pflexd at %s: not a socket owned by root in a directory only root can change: "
             "not used",
             path);
    return -EPERM;
  }
  return 0;
}

/* One request; body NULL for none; the reply's body into *ret_reply when
 * given (the caller frees it), else dropped. */
static int request(const struct pflex_spank_conf *c, const char *method, const char *path,
                   const char *body, struct reply **ret_reply, char *msg, size_t msglen) {
  int terr = socket_trusted(c->socket, msg, msglen);
  if (terr) return terr;
  CURL *h = curl_easy_init();
  struct reply *r = calloc(1, sizeof *r);
  if (!h || !r) {
    curl_easy_cleanup(h);
    free(r);
    snprintf(msg, msglen, "out of memory");
    return -ENOMEM;
  }
  char url[256];
  snprintf(url, sizeof url, "http://localhost%s", path);
  struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
  curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->socket);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
  if (body) curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
  CURLcode cc = curl_easy_perform(h);
  long status = 0;
  int err = 0;
  if (cc != CURLE_OK) {
    snprintf(msg, msglen, "pflexd at %s: %s", c->socket, curl_easy_strerror(cc));
    err = cc == CURLE_OUT_OF_MEMORY ? -ENOMEM : -ECONNREFUSED;
  } else {
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    err = status_error(status);
    if (err) pflex_spank_reply_error(r->buf, r->len, status, msg, msglen);
  }
  curl_slist_free_all(hdr);
  curl_easy_cleanup(h);
  if (!err && ret_reply)
    *ret_reply = r;
  else
    free(r);
  return err;
}

/* The options the job was given, beside its GPUs. */
static bool add_options(json_t *root, const struct pflex_spank_job_opts *o) {
  bool ok = true;
  if (o && o->has_class) ok &= json_object_set_new(root, "class", json_string(o->class_name)) == 0;
  if (o && o->has_weight) ok &= json_object_set_new(root, "weight", json_real(o->weight)) == 0;
  if (o && o->has_min_tput)
    ok &= json_object_set_new(root, "min_throughput", json_real(o->min_tput)) == 0;
  return ok;
}

int pflex_spank_agent_put_job(const struct pflex_spank_conf *c, const char *job,
                              const unsigned *gpus, size_t n,
                              const struct pflex_spank_job_opts *opts, char *msg, size_t msglen) {
  json_t *list = json_array();
  bool ok = list != NULL;
  for (size_t k = 0; ok && k < n; k++)
    ok = json_array_append_new(list, json_integer(gpus[k])) == 0;
  json_t *root = ok ? json_pack("{s:O}", "gpus", list) : NULL;
  if (root && !add_options(root, opts)) {
    json_decref(root);
    root = NULL;
  }
  char *body = root ? json_dumps(root, JSON_COMPACT) : NULL;
  json_decref(root);
  json_decref(list);
  if (!body) {
    snprintf(msg, msglen, "out of memory");
    return -ENOMEM;
  }
  char path[128];
  snprintf(path, sizeof path, "/v1/jobs/%s", job);
  int err = request(c, "PUT", path, body, NULL, msg, msglen);
  free(body);
  return err;
}

int pflex_spank_agent_delete_job(const struct pflex_spank_conf *c, const char *job, char *msg,
                                 size_t msglen) {
  char path[128];
  snprintf(path, sizeof path, "/v1/jobs/%s", job);
  return request(c, "DELETE", path, NULL, NULL, msg, msglen);
}

int pflex_spank_agent_holders(const struct pflex_spank_conf *c, const char *job,
                              const unsigned *gpus, size_t n,
                              char (*ret_ids)[PFLEX_SPANK_JOB_ID_MAX + 1], size_t max,
                              size_t *ret_n, char *msg, size_t msglen) {
  struct reply *r = NULL;
  int err = request(c, "GET", "/v1/jobs", NULL, &r, msg, msglen);
  if (err) return err;
  if (r->truncated) {
    snprintf(msg, msglen, "pflexd's GET /v1/jobs: reply over %d bytes", REPLY_MAX);
    err = -EPROTO;
  } else {
    err = pflex_spank_reply_holders(r->buf, r->len, job, gpus, n, ret_ids, max, ret_n, msg, msglen);
  }
  free(r);
  return err;
}
