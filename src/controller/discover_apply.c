/* The round's side of the discovery (discover_slurm.h): a new result from
 * the thread becomes the controller's agents, in one step between rounds.
 *
 * What a node knows (its GPUs, the caps it acknowledged, whether a restore
 * is pending) moves with its URL. A node that is no longer listed is kept
 * as an agent, marked departed, while it may hold a cap of ours: it is read,
 * counted at its bound when it does not answer, capped during an event and
 * lifted after it like any other; it goes once it has confirmed the lift
 * (or never answered us at all). So no GPU is left capped because Slurm
 * stopped listing its node. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/controller.h"
#include "controller/discover_slurm.h"
#include "controller/log.h"

/* A departed node that may hold no cap of ours (or that never answered us). */
static bool may_go(const struct ctl_node *nd) {
  return !nd->seen || (!nd->restore_pending && !nd->has_acked);
}

/* Takes the thread's newest result, if any; always refreshes d->seen. */
static bool take_new(struct ctl_discovery *d) {
  pthread_mutex_lock(&d->lock);
  d->seen = d->st;
  bool fresh = d->st.generation != d->applied;
  if (fresh) {
    ctl_slurm_nodes_release(&d->nodes);
    ctl_slurm_jobs_release(&d->jobs);
    d->nodes = d->new_nodes;
    d->jobs = d->new_jobs;
    d->new_nodes = (struct ctl_slurm_nodes){0};
    d->new_jobs = (struct ctl_slurm_jobs){0};
    d->applied = d->st.generation;
  }
  pthread_mutex_unlock(&d->lock);
  return fresh;
}

static bool in_sorted(const struct ctl_inventory *inv, const char *url) {
  return bsearch(url, inv->urls, inv->n, sizeof *inv->urls,
                 (int (*)(const void *, const void *))strcmp) != NULL;
}

struct old_ref {
  const char *url;
  size_t i;
};

static int by_ref_url(const void *a, const void *b) {
  return strcmp(((const struct old_ref *)a)->url, ((const struct old_ref *)b)->url);
}

/* The next node array: want's URLs (state carried over by URL), then the
 * old nodes not in want that must stay, marked departed. */
static struct ctl_node *next_nodes(const struct ctl_controller *c, const struct ctl_inventory *want,
                                   size_t *ret_n, size_t *ret_joined) {
  struct old_ref *refs = calloc(c->nnodes ? c->nnodes : 1, sizeof *refs);
  struct ctl_node *v = calloc(want->n + c->nnodes + 1, sizeof *v);
  if (!refs || !v) {
    free(refs);
    free(v);
    return NULL;
  }
  for (size_t i = 0; i < c->nnodes; i++)
    refs[i] = (struct old_ref){c->nodes[i].url, i};
  qsort(refs, c->nnodes, sizeof *refs, by_ref_url);
  size_t n = 0, joined = 0;
  for (size_t i = 0; i < want->n; i++, n++) {
    struct old_ref key = {want->urls[i], 0};
    const struct old_ref *r = bsearch(&key, refs, c->nnodes, sizeof *refs, by_ref_url);
    if (r) {
      v[n] = c->nodes[r->i];
    } else {
      snprintf(v[n].url, sizeof v[n].url, "%s", want->urls[i]);
      v[n].restore_pending = true; /* unknown until its first answer, as at start */
      joined++;
    }
    v[n].departed = false;
  }
  for (size_t i = 0; i < c->nnodes; i++)
    if (!in_sorted(want, c->nodes[i].url) && !may_go(&c->nodes[i])) {
      v[n] = c->nodes[i];
      v[n++].departed = true;
    }
  free(refs);
  *ret_n = n;
  *ret_joined = joined;
  return v;
}

/* Logs the agents that leave. */
static void log_departures(const struct ctl_controller *c, const struct ctl_inventory *want) {
  for (size_t i = 0; i < c->nnodes; i++) {
    const struct ctl_node *nd = &c->nodes[i];
    if (in_sorted(want, nd->url)) continue;
    if (!may_go(nd) && !nd->departed)
      ctl_log("warning", "agent '%s' left the Slurm inventory; kept until its GPUs are known "
                         "restored", nd->url);
    else if (may_go(nd))
      ctl_log("note", "agent '%s' left the Slurm inventory%s", nd->url,
              nd->seen ? " and holds no cap of ours: dropped" : " (it never answered): dropped");
  }
}

/* Replaces the nodes, the per-node buffers and the client in one step; on
 * failure nothing changes. */
static int swap_in(struct ctl_controller *c, struct ctl_node *v, size_t n) {
  struct ctl_request *reqs = calloc(2 * n + 1, sizeof *reqs);
  char **bodies = calloc(n + 1, sizeof *bodies);
  const char **urls = calloc(2 * n + 1, sizeof *urls);
  struct ctl_inventory inv = {calloc(n + 1, sizeof *inv.urls), n};
  char token[CTL_TOKEN_MAX + 1], err[256];
  bool has_token = c->cfg.agent_token_file[0];
  struct ctl_client *client = NULL;
  int rc = reqs && bodies && urls && inv.urls ? 0 : -ENOMEM;
  if (rc == 0 && has_token &&
      ctl_read_secret(c->cfg.agent_token_file, token, sizeof token, err, sizeof err) < 0) {
    ctl_log("error", "discovery: %s", err);
    rc = -EPERM;
  }
  for (size_t i = 0; rc == 0 && i < n; i++) {
    snprintf(inv.urls[i], CTL_URL_MAX, "%s", v[i].url);
    urls[i] = urls[n + i] = inv.urls[i];
  }
  if (rc == 0) rc = ctl_client_new(urls, 2 * n, has_token ? token : NULL, &client);
  free(urls);
  memset(token, 0, sizeof token);
  if (rc < 0) {
    free(reqs);
    free(bodies);
    ctl_inventory_release(&inv);
    return rc;
  }
  ctl_client_free(c->client);
  for (size_t i = 0; i < c->nnodes; i++)
    free(c->bodies[i]);
  free(c->bodies);
  free(c->reqs);
  ctl_inventory_release(&c->inv);
  pthread_mutex_lock(&c->lock); /* the API reads nnodes (health) */
  free(c->nodes);
  c->nodes = v;
  c->nnodes = n;
  pthread_mutex_unlock(&c->lock);
  c->reqs = reqs;
  c->bodies = bodies;
  c->client = client;
  c->inv = inv;
  return 0;
}

/* Whether next differs from the current nodes (URL by URL, and departed). */
static bool differs(const struct ctl_controller *c, const struct ctl_node *v, size_t n) {
  if (n != c->nnodes) return true;
  for (size_t i = 0; i < n; i++)
    if (strcmp(v[i].url, c->nodes[i].url) != 0 || v[i].departed != c->nodes[i].departed)
      return true;
  return false;
}

void ctl_discovery_apply(struct ctl_controller *c) {
  struct ctl_discovery *d = c->disc;
  char err[256];
  if (take_new(d)) {
    struct ctl_inventory want;
    if (ctl_discovery_urls(&d->nodes, c->cfg.agent_url_template, &want, err, sizeof err) < 0) {
      ctl_log("error", "discovery: %s; keeping the agents as they are", err);
      return;
    }
    ctl_inventory_release(&d->want);
    d->want = want;
  } else {
    bool departed = false;
    for (size_t i = 0; !departed && i < c->nnodes; i++)
      departed = c->nodes[i].departed;
    if (!departed) return;
  }
  size_t n, joined;
  struct ctl_node *v = next_nodes(c, &d->want, &n, &joined);
  if (v && differs(c, v, n)) {
    log_departures(c, &d->want);
    if (joined) ctl_log("note", "discovery: %zu new agents from Slurm", joined);
    if (swap_in(c, v, n) == 0)
      v = NULL;
    else
      ctl_log("error", "discovery: cannot apply the new inventory; keeping the agents as they are");
  }
  free(v);
}
