/* Per-job throughput scraped from the training process's own Prometheus
 * endpoint (PUT /v1/jobs/{id} with "metrics_url" and "metric"): once a
 * second, with libcurl's multi interface inside the agent's poll loop (no
 * threads, never blocking). A gauge is the throughput itself; a counter
 * (a name ending in _total) gives the rate between two scrapes. The sum over
 * the metric's series is taken (e.g. one series per rank). */
#ifndef PFLEX_AGENT_JOBSCRAPE_H
#define PFLEX_AGENT_JOBSCRAPE_H

#include <poll.h>
#include <stddef.h>

struct agent;

#define AGENT_SCRAPE_INTERVAL_S 1.0
#define AGENT_SCRAPE_MAX_BYTES (1u << 20)

struct agent_scrape_xfer;

struct agent_scrape {
  void *multi; /* CURLM */
  struct agent_scrape_xfer *xfers; /* one per job being scraped now */
  size_t n, cap;
  unsigned long long ok, failed;
};

int agent_scrape_init(struct agent_scrape *s);
void agent_scrape_release(struct agent_scrape *s);

/* Starts the scrapes that are due and moves those in flight on; finished
 * ones become throughput samples of their job. */
void agent_scrape_step(struct agent *a, double now);

/* Adds libcurl's fds to p (at most max; returns how many) and lowers
 * *timeout_ms to libcurl's own timeout while transfers are in flight. */
size_t agent_scrape_fds(struct agent *a, struct pollfd *p, size_t max, int *timeout_ms);

#endif
