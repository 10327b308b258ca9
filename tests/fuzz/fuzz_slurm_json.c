/* The controller's parsers of Slurm's --json output (controller/slurm_json.h:
 * `sinfo --json` nodes, `squeue --json` running jobs) and the agent URLs made
 * from the nodes, on arbitrary bytes; both parsers see every input.
 * Contract: an accepted node list holds valid, distinct names in sorted order
 * with a usable address, and every node's URL from a template fits; an
 * accepted job list has numeric ids and node ranges inside its name table,
 * each at least one valid name; a refusal is -EINVAL, -EPROTO or -ENOMEM with
 * a message. Seeds: output captured from Slurm 22.05 on the test bed. */
#include "fuzz.h"

#include <errno.h>
#include <string.h>

#include "controller/discover_slurm.h"
#include "controller/slurm_json.h"

/* fuzz-link: pflex_controller */
/* fuzz-args: -max_len=65536 */

static void check_refusal(int rc, const char *err) {
  fuzz_check(rc == -EINVAL || rc == -EPROTO || rc == -ENOMEM);
  fuzz_check(err[0] != '\0');
}

static void check_nodes(const uint8_t *data, size_t size) {
  struct ctl_slurm_nodes n;
  char err[256] = "";
  int rc = ctl_slurm_parse_nodes((const char *)data, size, &n, err, sizeof err);
  if (rc < 0) {
    check_refusal(rc, err);
    return;
  }
  fuzz_check(n.n <= CTL_SLURM_MAX_NODES);
  for (size_t i = 0; i < n.n; i++) {
    fuzz_check(ctl_slurm_name_ok(n.v[i].name));
    fuzz_check(n.v[i].addr[0] != '\0');
    fuzz_check(i == 0 || strcmp(n.v[i - 1].name, n.v[i].name) < 0);
    char url[CTL_URL_MAX];
    fuzz_check(ctl_discovery_node_url("http://{node}:9400", &n.v[i], url, sizeof url));
    fuzz_check(ctl_discovery_node_url("https://{addr}:9400/", &n.v[i], url, sizeof url));
  }
  struct ctl_inventory inv;
  if (ctl_discovery_urls(&n, "http://{node}:9400", &inv, err, sizeof err) == 0) {
    for (size_t i = 1; i < inv.n; i++)
      fuzz_check(strcmp(inv.urls[i - 1], inv.urls[i]) < 0);
    ctl_inventory_release(&inv);
  }
  ctl_slurm_nodes_release(&n);
}

static void check_jobs(const uint8_t *data, size_t size) {
  struct ctl_slurm_jobs j;
  char err[256] = "";
  int rc = ctl_slurm_parse_jobs((const char *)data, size, &j, err, sizeof err);
  if (rc < 0) {
    check_refusal(rc, err);
    return;
  }
  for (size_t i = 0; i < j.n; i++) {
    const struct ctl_slurm_job *x = &j.v[i];
    fuzz_check(x->id[0] != '\0' && strspn(x->id, "0123456789") == strlen(x->id));
    fuzz_check(x->count >= 1 && x->first + x->count <= j.nnames);
    for (size_t k = x->first; k < x->first + x->count; k++)
      fuzz_check(ctl_slurm_name_ok(j.names[k]));
  }
  ctl_slurm_jobs_release(&j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_nodes(data, size);
  check_jobs(data, size);
  return 0;
}
