/* The cluster side of hosted agents (sim_hosted.h). */
#include "controller/sim_hosted.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

int sim_hosted_specs(const struct sim_world *w, struct sim_host_node *nodes, char *err,
                     size_t errlen) {
  for (size_t i = 0; i < w->nnodes; i++) {
    int ji = w->nodes[i].job[0];
    const struct sim_kind *k = ji >= 0 ? w->jobs[ji].kind : &w->truth.kinds[0];
    if (strchr(k->spec, ',')) {
      snprintf(err, errlen, "the twin group '%s' has a comma: no sim spec can name it", k->group);
      return -EINVAL;
    }
    snprintf(nodes[i].sim_job, sizeof nodes[i].sim_job,
             "%s,gpus=%zu,clock=real,seed=%zu,warmup=%g,startup=%g,eval=0,ckpt=0,%s",
             k->spec, w->gpus_per_node, i + 1, SIM_GAP_S, SIM_STARTUP_S,
             ji >= 0 ? "since=3600" : "start=call"); /* the world's jobs train from its start */
    nodes[i].port = w->statsd_port[i];
  }
  return 0;
}

static void read_node(struct sim_node *nd, const char *body, size_t *wrong) {
  json_t *root = json_loads(body, 0, NULL), *g;
  size_t k;
  json_array_foreach(json_object_get(root, "gpus"), k, g) {
    json_int_t i = json_integer_value(json_object_get(g, "index"));
    if (i < 0 || (size_t)i >= nd->ngpus) continue;
    struct sim_gpu *x = &nd->g[i];
    json_t *p = json_object_get(g, "power_w"), *l = json_object_get(g, "limit_w"),
           *e = json_object_get(g, "enforced_limit_w"), *d = json_object_get(g, "default_limit_w");
    if (json_is_number(p)) x->avg_w = json_number_value(p);
    if (json_is_number(l)) x->limit_w = json_number_value(l);
    x->eff_w = json_is_number(e) ? json_number_value(e) : x->limit_w;
    if (json_is_number(d)) x->default_w = json_number_value(d);
    if (wrong && x->limit_w != x->default_w) (*wrong)++;
  }
  json_decref(root);
}

void sim_hosted_read(struct sim_world *w, struct ctl_client *agents, struct ctl_request *reqs,
                     const bool *skip, size_t *ret_wrong, size_t *ret_answered) {
  for (size_t i = 0; i < w->nnodes; i++)
    reqs[i] = (struct ctl_request){.method = skip && skip[i] ? NULL : "GET", .path = "/v1/gpus"};
  ctl_client_run(agents, reqs, 0.8);
  size_t answered = 0;
  if (ret_wrong) *ret_wrong = 0;
  for (size_t i = 0; i < w->nnodes; i++) {
    w->nodes[i].unread = reqs[i].status != 200 || !reqs[i].response;
    if (w->nodes[i].unread) {
      if (ret_wrong) *ret_wrong += w->nodes[i].ngpus; /* not known to be right */
      continue;
    }
    answered++;
    read_node(&w->nodes[i], reqs[i].response, ret_wrong);
  }
  if (ret_answered) *ret_answered = answered;
}
