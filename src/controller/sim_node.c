/* One simulated node's fake-NVML state file (sim_node.h). */
#include "controller/sim_node.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int sim_node_create(struct sim_node *nd, const char *path, size_t ngpus, const char *type,
                    double tdp_w, double min_w, double idle_w, unsigned node_index) {
  memset(nd, 0, sizeof *nd);
  snprintf(nd->path, sizeof nd->path, "%s", path);
  snprintf(nd->gpu_type, sizeof nd->gpu_type, "%s", type);
  nd->ngpus = ngpus;
  FILE *f = fopen(path, "w");
  if (!f) return -errno;
  for (size_t i = 0; i < ngpus; i++) {
    struct sim_gpu *g = &nd->g[i];
    g->limit_w = g->eff_w = g->pending_w = g->default_w = tdp_w;
    g->min_w = min_w;
    g->max_w = tdp_w;
    g->idle_w = idle_w;
    g->avg_w = idle_w;
    nd->job[i] = -1;
    fprintf(
        f,
        "gpu%zu.name=NVIDIA %s SXM (simulated)\ngpu%zu.uuid=GPU-SIM-%05u-%02zu\n"
        "gpu%zu.pci=00000000:%02zx:00.0\ngpu%zu.power_mw=%.0f\ngpu%zu.energy_mj=0\n"
        "gpu%zu.limit_mw=%.0f\ngpu%zu.default_mw=%.0f\ngpu%zu.min_mw=%.0f\ngpu%zu.max_mw=%.0f\n",
        i, type, i, node_index, i, i, 0x18 + i, i, idle_w * 1e3, i, i, tdp_w * 1e3, i, tdp_w * 1e3,
        i, min_w * 1e3, i, tdp_w * 1e3);
  }
  int rc = fclose(f) == 0 ? 0 : -EIO;
  return rc;
}

int sim_node_read_limits(struct sim_node *nd, double now, double lag_s) {
  FILE *f = fopen(nd->path, "r");
  if (!f) return -errno;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    unsigned i;
    double mw;
    if (sscanf(line, "gpu%u.limit_mw=%lf", &i, &mw) == 2 && i < nd->ngpus) {
      struct sim_gpu *g = &nd->g[i];
      double w = mw / 1e3;
      if (w != g->limit_w) {
        g->limit_w = w;
        g->pending_w = w;
        g->pending_since = now;
      }
    }
  }
  fclose(f);
  for (size_t i = 0; i < nd->ngpus; i++) {
    struct sim_gpu *g = &nd->g[i];
    if (g->pending_w != g->eff_w && now - g->pending_since >= lag_s) g->eff_w = g->pending_w;
  }
  return 0;
}

/* The fake's lock, waited for at most LOCK_WAIT_MS: an agent stopped
 * (SIGSTOP: the agent-stall fault) while it holds it would otherwise stop
 * the whole simulation, and with it the fault's own SIGCONT. */
#define LOCK_WAIT_MS 20

static bool lock_briefly(int fd) {
  for (int ms = 0; ms <= LOCK_WAIT_MS; ms++) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
    if (errno != EWOULDBLOCK && errno != EINTR) return false;
    nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
  }
  return false;
}

/* Rewrites power and energy keys, keeping everything else (the limits the
 * fake wrote), under the fake's lock, atomically (rename) for its readers.
 * -EAGAIN when the lock stays held (the node's readings then wait a tick). */
static int rewrite(struct sim_node *nd) {
  for (int attempt = 0; attempt < 5; attempt++) {
    int lock = open(nd->path, O_RDONLY | O_CLOEXEC);
    if (lock < 0) return -errno;
    if (!lock_briefly(lock)) {
      close(lock);
      return -EAGAIN;
    }
    struct stat a, b;
    /* The fake renames a new file into place: lock the file that is there now. */
    if (fstat(lock, &a) < 0 || stat(nd->path, &b) < 0 || a.st_ino != b.st_ino) {
      close(lock);
      continue;
    }
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.sim-tmp", nd->path);
    FILE *in = fopen(nd->path, "r"), *out = fopen(tmp, "w");
    int rc = in && out ? 0 : -EIO;
    char line[256];
    while (rc == 0 && fgets(line, sizeof line, in)) {
      unsigned i;
      char key[32];
      if (sscanf(line, "gpu%u.%31[a-z_]=", &i, key) == 2 && i < nd->ngpus &&
          (strcmp(key, "power_mw") == 0 || strcmp(key, "energy_mj") == 0)) {
        bool power = key[0] == 'p';
        fprintf(out, "gpu%u.%s=%.0f\n", i, key,
                power ? nd->g[i].avg_w * 1e3 : nd->g[i].energy_j * 1e3);
      } else {
        fputs(line, out);
      }
    }
    if (in) fclose(in);
    if (out && fclose(out) != 0) rc = -EIO;
    if (rc == 0 && rename(tmp, nd->path) < 0) rc = -errno;
    if (rc < 0) unlink(tmp);
    flock(lock, LOCK_UN);
    close(lock);
    return rc;
  }
  return -EAGAIN;
}

int sim_node_tick(struct sim_node *nd, const double *draw_w, double dt, size_t avg_ticks) {
  if (avg_ticks < 1) avg_ticks = 1;
  if (avg_ticks > SIM_HIST) avg_ticks = SIM_HIST;
  for (size_t i = 0; i < nd->ngpus; i++) {
    struct sim_gpu *g = &nd->g[i];
    g->hist[g->hh] = draw_w[i];
    g->hh = (g->hh + 1) % SIM_HIST;
    if (g->hn < SIM_HIST) g->hn++;
    size_t k = g->hn < avg_ticks ? g->hn : avg_ticks;
    double s = 0;
    for (size_t m = 0; m < k; m++)
      s += g->hist[(g->hh + SIM_HIST - 1 - m) % SIM_HIST];
    g->avg_w = s / (double)k;
    g->energy_j += draw_w[i] * dt;
  }
  return rewrite(nd);
}

double sim_node_reported(const struct sim_node *nd, size_t i) {
  return fmin(nd->g[i].avg_w, nd->g[i].limit_w);
}
