/* Scraping the jobs' Prometheus endpoints (jobscrape.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>

#include <curl/curl.h>

#include "agent/agent.h"
#include "agent/jobscrape.h"
#include "agent/promtext.h"

struct agent_scrape_xfer {
  CURL *easy;
  char job[AGENT_JOB_ID_MAX + 1]; /* by id: the job may be gone when it ends */
  char *buf;
  size_t len;
  double time_s; /* CLOCK_REALTIME when started, the sample's time */
};

int agent_scrape_init(struct agent_scrape *s) {
  memset(s, 0, sizeof *s);
  s->multi = curl_multi_init();
  return s->multi ? 0 : -ENOMEM;
}

static void xfer_release(struct agent_scrape *s, struct agent_scrape_xfer *x) {
  curl_multi_remove_handle(s->multi, x->easy);
  curl_easy_cleanup(x->easy);
  free(x->buf);
}

void agent_scrape_release(struct agent_scrape *s) {
  for (size_t i = 0; i < s->n; i++)
    xfer_release(s, &s->xfers[i]);
  free(s->xfers);
  if (s->multi) curl_multi_cleanup(s->multi);
  memset(s, 0, sizeof *s);
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *userdata) {
  struct agent_scrape_xfer *x = userdata;
  size_t n = size * nmemb;
  if (x->len + n > AGENT_SCRAPE_MAX_BYTES) return 0; /* aborts the transfer */
  char *b = realloc(x->buf, x->len + n + 1);
  if (!b) return 0;
  memcpy(b + x->len, data, n);
  x->buf = b;
  x->len += n;
  b[x->len] = '\0';
  return n;
}

static bool in_flight(const struct agent_scrape *s, const char *job) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->xfers[i].job, job) == 0) return true;
  return false;
}

static void start(struct agent_scrape *s, const struct agent_job *job) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 4;
    struct agent_scrape_xfer *v = realloc(s->xfers, cap * sizeof *v);
    if (!v) return;
    s->xfers = v;
    s->cap = cap;
  }
  struct agent_scrape_xfer *x = &s->xfers[s->n];
  memset(x, 0, sizeof *x);
  if (!(x->easy = curl_easy_init())) return;
  snprintf(x->job, sizeof x->job, "%s", job->id);
  x->time_s = pflex_tput_now();
  curl_easy_setopt(x->easy, CURLOPT_URL, job->scrape_url);
  curl_easy_setopt(x->easy, CURLOPT_PROTOCOLS_STR, "http");
  curl_easy_setopt(x->easy, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(x->easy, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, 900L);
  curl_easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
  curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x->job);
  if (curl_multi_add_handle(s->multi, x->easy) != CURLM_OK) {
    curl_easy_cleanup(x->easy);
    return;
  }
  s->n++;
}

/* The throughput sample of a finished scrape, into its job (if still there). */
static void finish(struct agent *a, struct agent_scrape_xfer *x, CURLcode rc) {
  struct agent_job *job = agent_jobs_find(&a->jobs, x->job);
  long status = 0;
  curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
  double v;
  size_t series;
  bool ok = job && rc == CURLE_OK && status == 200 && x->buf &&
            agent_prom_sum(x->buf, x->len, job->scrape_metric, &v, &series) == 0;
  if (!job) return;
  if (!ok) {
    job->scrape_failures++;
    a->scrape.failed++;
    return;
  }
  a->scrape.ok++;
  size_t nlen = strlen(job->scrape_metric);
  bool counter = nlen > 6 && strcmp(job->scrape_metric + nlen - 6, "_total") == 0;
  if (!counter) {
    agent_job_tput_push(job, x->time_s, v);
  } else if (job->have_prev && x->time_s > job->prev_time_s && v >= job->prev_value) {
    agent_job_tput_push(job, x->time_s, (v - job->prev_value) / (x->time_s - job->prev_time_s));
  }
  job->prev_value = v;
  job->prev_time_s = x->time_s;
  job->have_prev = true;
}

static void collect(struct agent *a) {
  struct agent_scrape *s = &a->scrape;
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(s->multi, &left))) {
    if (m->msg != CURLMSG_DONE) continue;
    for (size_t i = 0; i < s->n; i++) {
      if (s->xfers[i].easy != m->easy_handle) continue;
      finish(a, &s->xfers[i], m->data.result);
      xfer_release(s, &s->xfers[i]);
      s->xfers[i] = s->xfers[--s->n];
      break;
    }
  }
}

void agent_scrape_step(struct agent *a, double now) {
  struct agent_scrape *s = &a->scrape;
  if (!s->multi) return;
  for (size_t k = 0; k < a->jobs.n; k++) {
    struct agent_job *job = &a->jobs.v[k];
    if (!job->scrape_url[0] || now < job->next_scrape_s || in_flight(s, job->id)) continue;
    job->next_scrape_s = now + AGENT_SCRAPE_INTERVAL_S;
    start(s, job);
  }
  if (!s->n) return;
  int running;
  curl_multi_perform(s->multi, &running);
  collect(a);
}

size_t agent_scrape_fds(struct agent *a, struct pollfd *p, size_t max, int *timeout_ms) {
  struct agent_scrape *s = &a->scrape;
  if (!s->multi || !s->n) return 0;
  fd_set r, w, x;
  int maxfd = -1;
  FD_ZERO(&r);
  FD_ZERO(&w);
  FD_ZERO(&x);
  if (curl_multi_fdset(s->multi, &r, &w, &x, &maxfd) != CURLM_OK) return 0;
  size_t n = 0;
  for (int fd = 0; fd <= maxfd && n < max; fd++) {
    short ev = (short)((FD_ISSET(fd, &r) ? POLLIN : 0) | (FD_ISSET(fd, &w) ? POLLOUT : 0));
    if (ev) p[n++] = (struct pollfd){.fd = fd, .events = ev};
  }
  long t = -1;
  curl_multi_timeout(s->multi, &t);
  if (maxfd < 0 || t < 0 || t > 50) t = 50; /* no fd yet (resolving): look again soon */
  if (t < *timeout_ms) *timeout_ms = (int)t;
  return n;
}
