/* Discovery from Slurm: the polls and the thread that runs them
 * (discover_slurm.h). */
#include "controller/discover_slurm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/controller.h"
#include "controller/log.h"
#include "controller/run_cmd.h"

bool ctl_discovery_is_agent(const struct ctl_slurm_node *nd) {
  return nd->gpus && strcmp(nd->state, "future") != 0 && !nd->powered_down;
}

/* Runs BIN_DIR/name --json; on success *ret holds its stdout. */
static int run_json(const struct ctl_config *cfg, const char *name, struct ctl_cmd_result *ret,
                    char *err, size_t errlen) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", cfg->slurm_bin_dir, name);
  char *argv[] = {path, "--json", NULL};
  size_t max = (size_t)cfg->slurm_max_output_mb << 20;
  int rc = ctl_cmd_run(argv, cfg->slurm_timeout_s, max, ret);
  if (rc == -ETIMEDOUT)
    snprintf(err, errlen, "%s --json: no answer within %g s (slurm_timeout_s); killed", name,
             cfg->slurm_timeout_s);
  else if (rc == -EFBIG)
    snprintf(err, errlen, "%s --json: more than %d MiB of output (slurm_max_output_mb); killed",
             name, cfg->slurm_max_output_mb);
  else if (rc < 0)
    snprintf(err, errlen, "cannot run '%s': %s", path, strerror(-rc));
  else if (ret->signal)
    snprintf(err, errlen, "%s --json: killed by signal %d%s%s", name, ret->signal,
             ret->err[0] ? ": " : "", ret->err);
  else if (ret->status != 0)
    snprintf(err, errlen, "%s --json: exit status %d%s%s", name, ret->status,
             ret->err[0] ? ": " : "", ret->err);
  else
    return 0;
  ctl_cmd_result_release(ret);
  return rc < 0 ? rc : -EIO;
}

int ctl_discovery_poll(const struct ctl_config *cfg, struct ctl_slurm_nodes *ret_nodes,
                       struct ctl_slurm_jobs *ret_jobs, char *err, size_t errlen) {
  struct ctl_cmd_result r;
  int rc = run_json(cfg, "sinfo", &r, err, errlen);
  if (rc < 0) return rc;
  struct ctl_slurm_nodes nodes;
  rc = ctl_slurm_parse_nodes(r.out ? r.out : "", r.out_len, &nodes, err, errlen);
  ctl_cmd_result_release(&r);
  if (rc < 0) return rc;
  /* Every agent's URL must fit, and a Slurm without GPU nodes is no
   * inventory to switch to: both fail the poll, not the round. */
  struct ctl_inventory inv;
  rc = ctl_discovery_urls(&nodes, cfg->agent_url_template, &inv, err, errlen);
  if (rc == 0) {
    if (inv.n == 0) {
      snprintf(err, errlen, "sinfo lists no node with a GPU (GRES gpu) that is not FUTURE or "
                            "POWERED_DOWN");
      rc = -ENODEV;
    }
    ctl_inventory_release(&inv);
  }
  if (rc < 0) {
    ctl_slurm_nodes_release(&nodes);
    return rc;
  }
  rc = run_json(cfg, "squeue", &r, err, errlen);
  if (rc < 0) {
    ctl_slurm_nodes_release(&nodes);
    return rc;
  }
  struct ctl_slurm_jobs jobs;
  rc = ctl_slurm_parse_jobs(r.out ? r.out : "", r.out_len, &jobs, err, errlen);
  ctl_cmd_result_release(&r);
  if (rc < 0) {
    ctl_slurm_nodes_release(&nodes);
    return rc;
  }
  *ret_nodes = nodes;
  *ret_jobs = jobs;
  return 0;
}

int ctl_discovery_template_check(const char *t, char *err, size_t errlen) {
  bool scheme = strncmp(t, "http://", 7) == 0 || strncmp(t, "https://", 8) == 0;
  bool field = strstr(t, "{node}") || strstr(t, "{addr}");
  size_t braces = 0;
  for (const char *p = t; *p; p++)
    braces += *p == '{';
  size_t known = 0;
  for (const char *p = t; (p = strchr(p, '{')) != NULL; p++)
    known += strncmp(p, "{node}", 6) == 0 || strncmp(p, "{addr}", 6) == 0;
  if (!scheme || !field || braces != known || strpbrk(t, " \t\"'\\")) {
    snprintf(err, errlen,
             "agent_url_template '%s': want http:// or https://, with {node} or {addr} "
             "(e.g. http://{node}:9400) and no other '{' or spaces",
             t);
    return -EINVAL;
  }
  return 0;
}

bool ctl_discovery_node_url(const char *t, const struct ctl_slurm_node *nd, char *buf,
                            size_t size) {
  size_t n = 0;
  for (const char *p = t; *p;) {
    const char *v = NULL;
    char addr[CTL_SLURM_ADDR_MAX + 2];
    if (strncmp(p, "{node}", 6) == 0) v = nd->name;
    if (strncmp(p, "{addr}", 6) == 0) {
      /* An IPv6 address goes in brackets. */
      snprintf(addr, sizeof addr, strchr(nd->addr, ':') ? "[%s]" : "%s", nd->addr);
      v = addr;
    }
    size_t len = v ? strlen(v) : 1;
    if (n + len + 1 > size) return false;
    memcpy(buf + n, v ? v : p, len);
    n += len;
    p += v ? 6 : 1;
  }
  buf[n] = '\0';
  return true;
}

static int by_url(const void *a, const void *b) {
  return strcmp(a, b);
}

int ctl_discovery_urls(const struct ctl_slurm_nodes *nodes, const char *url_template,
                       struct ctl_inventory *ret, char *err, size_t errlen) {
  struct ctl_inventory inv = {calloc(nodes->n ? nodes->n : 1, sizeof *inv.urls), 0};
  if (!inv.urls) {
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
  }
  for (size_t i = 0; i < nodes->n; i++) {
    if (!ctl_discovery_is_agent(&nodes->v[i])) continue;
    if (!ctl_discovery_node_url(url_template, &nodes->v[i], inv.urls[inv.n], CTL_URL_MAX)) {
      snprintf(err, errlen, "node '%s': its agent URL is longer than %d characters",
               nodes->v[i].name, CTL_URL_MAX - 1);
      ctl_inventory_release(&inv);
      return -EINVAL;
    }
    inv.n++;
  }
  qsort(inv.urls, inv.n, sizeof *inv.urls, by_url);
  size_t w = 0; /* two nodes at one URL (a template without {node}) are one agent */
  for (size_t i = 0; i < inv.n; i++)
    if (w == 0 || strcmp(inv.urls[w - 1], inv.urls[i]) != 0) memmove(inv.urls[w++], inv.urls[i], CTL_URL_MAX);
  inv.n = w;
  *ret = inv;
  return 0;
}

/* One poll by the thread: publishes a success, records a failure. */
static void poll_once(struct ctl_discovery *d) {
  double t0 = ctl_mono_now();
  struct ctl_slurm_nodes nodes = {0};
  struct ctl_slurm_jobs jobs = {0};
  char err[512] = "";
  int rc = ctl_discovery_poll(&d->cfg, &nodes, &jobs, err, sizeof err);
  pthread_mutex_lock(&d->lock);
  bool was_ok = d->st.ok;
  d->st.polls++;
  d->st.last_poll = ctl_epoch_now();
  d->st.last_poll_s = ctl_mono_now() - t0;
  d->st.ok = rc == 0;
  if (rc == 0) {
    ctl_slurm_nodes_release(&d->new_nodes);
    ctl_slurm_jobs_release(&d->new_jobs);
    d->new_nodes = nodes;
    d->new_jobs = jobs;
    d->st.generation++;
    d->st.last_ok = d->st.last_poll;
    d->st.error[0] = '\0';
  } else {
    d->st.failures++;
    snprintf(d->st.error, sizeof d->st.error, "%s", err);
  }
  pthread_mutex_unlock(&d->lock);
  if (rc < 0)
    ctl_log("warning", "discovery from Slurm failed (keeping the last good inventory): %s", err);
  else if (!was_ok)
    ctl_log("note", "discovery from Slurm works again");
}

static void *thread_main(void *arg) {
  struct ctl_discovery *d = arg;
  pthread_mutex_lock(&d->lock);
  while (!d->stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double due = ts.tv_sec + ts.tv_nsec / 1e9 + d->cfg.slurm_poll_s;
    ts.tv_sec = (time_t)due;
    ts.tv_nsec = (long)((due - (double)ts.tv_sec) * 1e9);
    while (!d->stop && pthread_cond_timedwait(&d->wake, &d->lock, &ts) == 0)
      ;
    if (d->stop) break;
    pthread_mutex_unlock(&d->lock);
    poll_once(d);
    pthread_mutex_lock(&d->lock);
  }
  pthread_mutex_unlock(&d->lock);
  return NULL;
}

int ctl_discovery_open(const struct ctl_config *cfg, struct ctl_discovery **ret,
                       struct ctl_inventory *inv, char *err, size_t errlen) {
  struct ctl_discovery *d = calloc(1, sizeof *d);
  if (!d) {
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
  }
  d->cfg = *cfg;
  pthread_mutex_init(&d->lock, NULL);
  pthread_cond_init(&d->wake, NULL);
  *ret = d;
  char why[512];
  int rc = ctl_discovery_poll(cfg, &d->nodes, &d->jobs, why, sizeof why);
  if (rc < 0) { /* Slurm's state, not the configuration: worth a retry (-EAGAIN) */
    snprintf(err, errlen, "discovery from Slurm: %s", why);
    return rc == -ENOMEM ? rc : -EAGAIN;
  }
  rc = ctl_discovery_urls(&d->nodes, cfg->agent_url_template, inv, why, sizeof why);
  if (rc < 0) {
    snprintf(err, errlen, "discovery from Slurm: %s", why);
    return rc;
  }
  double now = ctl_epoch_now();
  d->st = (struct ctl_discovery_state){.last_ok = now, .last_poll = now, .ok = true, .polls = 1};
  d->seen = d->st;
  rc = ctl_discovery_urls(&d->nodes, cfg->agent_url_template, &d->want, why, sizeof why);
  if (rc < 0) return rc;
  if (pthread_create(&d->thread, NULL, thread_main, d) != 0) {
    snprintf(err, errlen, "cannot start the discovery thread");
    return -EAGAIN;
  }
  d->running = true;
  return 0;
}

void ctl_discovery_close(struct ctl_discovery *d) {
  if (!d) return;
  if (d->running) {
    pthread_mutex_lock(&d->lock);
    d->stop = true;
    pthread_cond_signal(&d->wake);
    pthread_mutex_unlock(&d->lock);
    pthread_join(d->thread, NULL);
  }
  ctl_slurm_nodes_release(&d->nodes);
  ctl_slurm_jobs_release(&d->jobs);
  ctl_slurm_nodes_release(&d->new_nodes);
  ctl_slurm_jobs_release(&d->new_jobs);
  ctl_inventory_release(&d->want);
  pthread_cond_destroy(&d->wake);
  pthread_mutex_destroy(&d->lock);
  free(d);
}
