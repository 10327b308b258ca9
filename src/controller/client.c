/* HTTP to many agents at once with libcurl multi (client.h), driven by
 * epoll through curl's socket interface: each wakeup costs what its ready
 * sockets need, where curl_multi_perform + curl_multi_poll walked every
 * transfer and polled every socket at each of a batch's many wakeups
 * (O(n^2) per batch: at 1,000 agents the controller's largest cost). */
#include "controller/client.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#define MAX_RESPONSE (4u << 20)

struct conn {
  CURL *easy;
  char url[512];
  char *buf;
  size_t len, cap;
  bool overflow;
  bool refresh_dns; /* the last request failed: resolve the name again */
  struct curl_slist *headers;
};

struct ctl_client {
  CURLM *multi;
  struct conn *conns;
  size_t n;
  char auth[600];
  int ep;          /* epoll: the sockets curl wants watched */
  double timer_due; /* when curl's timer runs out (monotonic s), INFINITY: none */
};

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CURLMOPT_SOCKETFUNCTION: watch s for what curl asks (socketp: added yet). */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *user, void *socketp) {
  (void)easy;
  struct ctl_client *c = user;
  if (what == CURL_POLL_REMOVE) {
    epoll_ctl(c->ep, EPOLL_CTL_DEL, s, NULL);
    curl_multi_assign(c->multi, s, NULL);
    return 0;
  }
  struct epoll_event ev = {.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) |
                                     (what & CURL_POLL_OUT ? EPOLLOUT : 0u),
                           .data.fd = s};
  if (epoll_ctl(c->ep, socketp ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s, &ev) < 0 && errno == ENOENT)
    epoll_ctl(c->ep, EPOLL_CTL_ADD, s, &ev); /* curl reused a descriptor we dropped */
  curl_multi_assign(c->multi, s, (void *)1);
  return 0;
}

/* CURLMOPT_TIMERFUNCTION: when curl wants to be called without a socket event. */
static int on_timer(CURLM *multi, long timeout_ms, void *user) {
  (void)multi;
  ((struct ctl_client *)user)->timer_due = timeout_ms < 0 ? INFINITY : mono_s() + timeout_ms / 1e3;
  return 0;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *user) {
  struct conn *k = user;
  size_t add = size * nmemb;
  if (k->len + add + 1 > MAX_RESPONSE) {
    k->overflow = true;
    return 0;
  }
  if (k->len + add + 1 > k->cap) {
    size_t nc = k->cap ? k->cap : 4096;
    while (nc < k->len + add + 1)
      nc *= 2;
    char *p = realloc(k->buf, nc);
    if (!p) return 0;
    k->buf = p;
    k->cap = nc;
  }
  memcpy(k->buf + k->len, ptr, add);
  k->len += add;
  k->buf[k->len] = '\0';
  return add;
}

int ctl_client_new(const char *const *urls, size_t n, const char *token, struct ctl_client **ret) {
  struct ctl_client *c = calloc(1, sizeof *c);
  if (!c) return -ENOMEM;
  c->ep = -1;
  c->multi = curl_multi_init();
  c->conns = calloc(n ? n : 1, sizeof *c->conns);
  c->n = n;
  if (!c->multi || !c->conns) {
    ctl_client_free(c);
    return -ENOMEM;
  }
  c->ep = epoll_create1(EPOLL_CLOEXEC);
  c->timer_due = INFINITY;
  if (c->ep < 0) {
    ctl_client_free(c);
    return -ENOMEM;
  }
  if (token) snprintf(c->auth, sizeof c->auth, "Authorization: Bearer %s", token);
  curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)n + 16);
  curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
  curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer);
  curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
  for (size_t i = 0; i < n; i++) {
    struct conn *k = &c->conns[i];
    snprintf(k->url, sizeof k->url, "%s", urls[i]);
    size_t l = strlen(k->url);
    if (l && k->url[l - 1] == '/') k->url[l - 1] = '\0';
    k->easy = curl_easy_init();
    k->headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (token) k->headers = curl_slist_append(k->headers, c->auth);
    k->headers = curl_slist_append(k->headers, "Expect:");
    if (!k->easy || !k->headers) {
      ctl_client_free(c);
      return -ENOMEM;
    }
  }
  *ret = c;
  return 0;
}

void ctl_client_free(struct ctl_client *c) {
  if (!c) return;
  for (size_t i = 0; c->conns && i < c->n; i++) {
    if (c->conns[i].easy) curl_easy_cleanup(c->conns[i].easy);
    curl_slist_free_all(c->conns[i].headers);
    free(c->conns[i].buf);
  }
  free(c->conns);
  if (c->multi) curl_multi_cleanup(c->multi);
  if (c->ep >= 0) close(c->ep);
  free(c);
}

static void setup(struct conn *k, const struct ctl_request *r, double timeout_s) {
  char url[700];
  snprintf(url, sizeof url, "%s%s", k->url, r->path);
  CURL *e = k->easy;
  k->len = 0;
  k->overflow = false;
  if (k->buf) k->buf[0] = '\0';
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)k);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, k->headers);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, k);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_s * 1000));
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  /* DNS answers are kept while the agent answers: with an expiry, curl
   * walks its whole DNS cache (an entry per agent) at every transfer, which
   * at 1,000 agents was the largest part of the controller's round. */
  curl_easy_setopt(e, CURLOPT_DNS_CACHE_TIMEOUT, k->refresh_dns ? 0L : -1L);
  k->refresh_dns = false;
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
  curl_easy_setopt(e, CURLOPT_NOBODY, 0L);
  if (r->body) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(r->body));
  } else {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
    curl_easy_setopt(e, CURLOPT_HTTPGET, strcmp(r->method, "GET") == 0 ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
  }
}

static void finish(struct ctl_client *c, CURLMsg *m, struct ctl_request *reqs) {
  char *priv = NULL;
  curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
  size_t i = (size_t)(priv - (char *)c->conns) / sizeof *c->conns;
  if (priv && i < c->n) {
    struct conn *k = &c->conns[i];
    struct ctl_request *r = &reqs[i];
    curl_easy_getinfo(k->easy, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(k->easy, CURLINFO_TOTAL_TIME, &r->elapsed_s);
    if (m->data.result != CURLE_OK) {
      k->refresh_dns = true;
      snprintf(r->error, sizeof r->error, "%s",
               k->overflow ? "response too large" : curl_easy_strerror(m->data.result));
      r->status = 0;
    }
    r->response = k->buf ? k->buf : (char *)"";
    r->len = k->len;
    curl_multi_remove_handle(c->multi, k->easy);
  }
}

static void drain(struct ctl_client *c, struct ctl_request *reqs) {
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(c->multi, &left)))
    if (m->msg == CURLMSG_DONE) finish(c, m, reqs);
}

int ctl_client_run(struct ctl_client *c, struct ctl_request *reqs, double timeout_s) {
  for (size_t i = 0; i < c->n; i++) {
    reqs[i].status = 0;
    reqs[i].response = (char *)"";
    reqs[i].len = 0;
    reqs[i].error[0] = '\0';
    if (!reqs[i].method) continue;
    setup(&c->conns[i], &reqs[i], timeout_s);
    if (curl_multi_add_handle(c->multi, c->conns[i].easy) != CURLM_OK) return -EIO;
  }
  int running = 0;
  if (curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running) != CURLM_OK) return -EIO;
  drain(c, reqs);
  /* Every transfer has its own timeout; the batch is bounded a second past it. */
  double deadline = mono_s() + timeout_s + 1.0;
  struct epoll_event ev[256];
  while (running && mono_s() < deadline) {
    double wait = fmin(fmax(c->timer_due - mono_s(), 0), 0.1);
    int n = epoll_wait(c->ep, ev, 256, (int)ceil(wait * 1e3));
    if (n < 0 && errno != EINTR) return -EIO;
    for (int k = 0; k < n; k++) {
      int flags = (ev[k].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                  (ev[k].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                  (ev[k].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
      if (curl_multi_socket_action(c->multi, ev[k].data.fd, flags, &running) != CURLM_OK)
        return -EIO;
    }
    if (mono_s() >= c->timer_due) {
      c->timer_due = INFINITY; /* curl sets the next one */
      if (curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running) != CURLM_OK)
        return -EIO;
    }
    drain(c, reqs);
  }
  for (size_t i = 0; running && i < c->n; i++) /* past the bound: give up what is left */
    if (reqs[i].method && !reqs[i].status && !reqs[i].error[0]) {
      curl_multi_remove_handle(c->multi, c->conns[i].easy);
      snprintf(reqs[i].error, sizeof reqs[i].error, "no answer within the batch's bound");
    }
  return 0;
}
