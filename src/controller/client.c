/* HTTP to many agents at once with libcurl multi (client.h). */
#include "controller/client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#define MAX_RESPONSE (4u << 20)

struct conn {
  CURL *easy;
  char url[512];
  char *buf;
  size_t len, cap;
  bool overflow;
  struct curl_slist *headers;
};

struct ctl_client {
  CURLM *multi;
  struct conn *conns;
  size_t n;
  char auth[600];
};

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
  c->multi = curl_multi_init();
  c->conns = calloc(n ? n : 1, sizeof *c->conns);
  c->n = n;
  if (!c->multi || !c->conns) {
    ctl_client_free(c);
    return -ENOMEM;
  }
  if (token) snprintf(c->auth, sizeof c->auth, "Authorization: Bearer %s", token);
  curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)n + 16);
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
      snprintf(r->error, sizeof r->error, "%s",
               k->overflow ? "response too large" : curl_easy_strerror(m->data.result));
      r->status = 0;
    }
    r->response = k->buf ? k->buf : (char *)"";
    r->len = k->len;
    curl_multi_remove_handle(c->multi, k->easy);
  }
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
  int running = 1;
  while (running) {
    if (curl_multi_perform(c->multi, &running) != CURLM_OK) return -EIO;
    if (running && curl_multi_poll(c->multi, NULL, 0, 100, NULL) != CURLM_OK) return -EIO;
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left)))
      if (m->msg == CURLMSG_DONE) finish(c, m, reqs);
  }
  return 0;
}
