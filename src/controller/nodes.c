/* Nodes as the controller sees them (nodes.h). */
#include "controller/nodes.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv.h"

/* The bodies into g and nd->jobs: one GET /v1/node body (gpus_body ==
 * jobs_body), or GET /v1/gpus and GET /v1/jobs. */
static bool parse_bodies(struct ctl_node *nd, const char *gpus_body, size_t gpus_len,
                         const char *jobs_body, size_t jobs_len, struct ctl_gpu_state *g,
                         size_t *ng, size_t *nj) {
  char err[160];
  const char *what = "GET /v1/node";
  int rc;
  if (gpus_body == jobs_body) {
    rc = ctl_parse_node(gpus_body, gpus_len, g, CTL_MAX_NODE_GPUS, ng, nd->jobs,
                        CTL_MAX_NODE_GPUS, nj, err, sizeof err);
  } else {
    what = "GET /v1/gpus";
    rc = ctl_parse_gpus(gpus_body, gpus_len, g, CTL_MAX_NODE_GPUS, ng, err, sizeof err);
    if (rc == 0) {
      what = "GET /v1/jobs";
      rc = ctl_parse_jobs(jobs_body, jobs_len, nd->jobs, CTL_MAX_NODE_GPUS, nj, err, sizeof err);
    }
  }
  if (rc < 0) snprintf(nd->error, sizeof nd->error, "%s: %s", what, err);
  return rc == 0;
}

bool ctl_node_update(struct ctl_node *nd, const char *gpus_body, size_t gpus_len,
                     const char *jobs_body, size_t jobs_len, const char *why, double now) {
  struct ctl_gpu_state g[CTL_MAX_NODE_GPUS];
  size_t ng = 0, nj = 0;
  bool ok = gpus_body && jobs_body;
  if (!ok) snprintf(nd->error, sizeof nd->error, "%s", why ? why : "no answer");
  ok = ok && parse_bodies(nd, gpus_body, gpus_len, jobs_body, jobs_len, g, &ng, &nj);
  nd->reachable = ok;
  if (!ok) {
    nd->failures++;
    return false;
  }
  if (ng != nd->ngpus) /* the node changed: our view of its caps no longer holds */
    nd->has_acked = false;
  memcpy(nd->gpu, g, ng * sizeof g[0]);
  nd->ngpus = ng;
  nd->njobs = nj;
  nd->seen = true;
  nd->last_ok = now;
  nd->failures = 0;
  nd->error[0] = '\0';
  return true;
}

double ctl_node_power_w(const struct ctl_node *nd) {
  double s = 0;
  for (size_t i = 0; i < nd->ngpus; i++)
    if (isfinite(nd->gpu[i].power_w))
      s += nd->gpu[i].power_w;
    else if (isfinite(nd->gpu[i].enforced_w))
      s += nd->gpu[i].enforced_w; /* no reading: the most it may draw */
  return s;
}

double ctl_node_bound_w(const struct ctl_node *nd, double unseen_w) {
  if (nd->reachable) return ctl_node_power_w(nd);
  if (!nd->seen) return unseen_w;
  double s = 0;
  for (size_t i = 0; i < nd->ngpus; i++) {
    const struct ctl_gpu_state *g = &nd->gpu[i];
    double hi = isfinite(g->max_w) ? g->max_w : g->limit_w;
    if (nd->has_acked && nd->acked_w[i] > 0)
      s += nd->acked_w[i];
    else if (isfinite(g->enforced_w) && g->lease_s_left >= 0)
      s += g->enforced_w; /* someone's lease holds it (a controller before us) */
    else
      s += hi;
  }
  return s;
}

size_t ctl_node_capped(const struct ctl_node *nd) {
  size_t n = 0;
  for (size_t i = 0; i < nd->ngpus; i++)
    if (isfinite(nd->gpu[i].limit_w) && isfinite(nd->gpu[i].default_w) &&
        fabs(nd->gpu[i].limit_w - nd->gpu[i].default_w) > 0.5)
      n++;
  return n;
}

struct uuid_ref {
  const char *uuid;
  size_t node;
};

static int cmp_uuid_ref(const void *a, const void *b) {
  const struct uuid_ref *x = a, *y = b;
  int c = strcmp(x->uuid, y->uuid);
  return c ? c : (x->node > y->node) - (x->node < y->node);
}

/* FNV-1a over the reachable nodes' indexes and GPU UUIDs (never 0). */
static uint64_t uuids_digest(const struct ctl_node *nodes, size_t n) {
  uint64_t h = PFLEX__FNV1A_INIT;
  for (size_t i = 0; i < n; i++) {
    if (!nodes[i].reachable) continue;
    h = pflex__fnv1a(h, &i, sizeof i);
    for (size_t g = 0; g < nodes[i].ngpus; g++) /* the NUL too: it ends each UUID */
      h = pflex__fnv1a(h, nodes[i].gpu[g].uuid, strlen(nodes[i].gpu[g].uuid) + 1);
  }
  return h ? h : 1;
}

int ctl_nodes_mark_duplicates(struct ctl_node *nodes, size_t n, uint64_t *sig) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    nodes[i].duplicate = false;
    if (nodes[i].reachable) total += nodes[i].ngpus;
  }
  uint64_t h = sig ? uuids_digest(nodes, n) : 0;
  if (sig && *sig == h) return 0; /* the same GPUs as when none was listed twice */
  struct uuid_ref *v = malloc((total ? total : 1) * sizeof *v);
  if (!v) return -ENOMEM;
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t g = 0; nodes[i].reachable && g < nodes[i].ngpus; g++)
      if (nodes[i].gpu[g].uuid[0]) v[m++] = (struct uuid_ref){nodes[i].gpu[g].uuid, i};
  qsort(v, m, sizeof *v, cmp_uuid_ref);
  /* Runs of one UUID, by node: a run's first entry is the earliest node with it. */
  for (size_t a = 0, b; a < m; a = b)
    for (b = a + 1; b < m && strcmp(v[b].uuid, v[a].uuid) == 0; b++) {
      struct ctl_node *nd = &nodes[v[b].node];
      if (v[b].node == v[a].node || (nd->duplicate && nd->duplicate_of <= v[a].node)) continue;
      nd->duplicate = true;
      nd->duplicate_of = v[a].node;
    }
  free(v); /* its UUIDs point into the views emptied below */
  int dups = 0;
  for (size_t i = 0; i < n; i++)
    if (nodes[i].duplicate) {
      nodes[i].ngpus = 0;
      nodes[i].njobs = 0;
      dups++;
    }
  if (sig) *sig = dups ? 0 : h; /* duplicates: checked again next round */
  return dups;
}
