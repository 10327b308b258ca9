/* pflex_spank.so: the SPANK plugin that makes power caps follow Slurm jobs
 * (docs/slurm.md). Options --pflex-class, --pflex-weight and
 * --pflex-min-throughput are checked where they are given (sbatch, srun,
 * salloc refuse a bad value); the job prolog (root, on the node) registers the
 * job's GPUs with the local pflexd, the job epilog unregisters them, and
 * pflexd then restores those GPUs' original limits. Built against one Slurm
 * release's headers: Slurm refuses it under another major release. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "spank_agent.h"
#include "spank_args.h"
#include "spank_mapdir.h"

#define EXPORT __attribute__((visibility("default")))

/* SPANK_PLUGIN(pflex, 1), with the symbols Slurm looks up made visible. */
EXPORT extern const char plugin_name[];
EXPORT extern const char plugin_type[];
EXPORT extern const unsigned int plugin_version;
EXPORT extern const unsigned int spank_plugin_version;
SPANK_PLUGIN(pflex, 1);

static struct pflex_spank_conf conf;
static bool conf_loaded;
static struct pflex_spank_job_opts opts;

enum { OPT_CLASS, OPT_WEIGHT, OPT_MIN_TPUT };

static int on_option(int val, const char *optarg, int remote);

static struct spank_option options[] = {
    {"pflex-class", "NAME",
     "Power flexibility class of the job (e.g. rigid, flex10, flex25, flex50: the largest "
     "throughput loss it accepts in a power cut)",
     1, OPT_CLASS, on_option},
    {"pflex-weight", "X", "Weight of the job's throughput when power is cut (default 1)", 1,
     OPT_WEIGHT, on_option},
    {"pflex-min-throughput", "FRACTION",
     "Least fraction of its uncapped throughput the job keeps in a power cut", 1, OPT_MIN_TPUT,
     on_option},
    SPANK_OPTIONS_TABLE_END,
};

/* The job environment variables a job's tasks see its options in. */
static const char *const env_names[] = {"PFLEX_CLASS", "PFLEX_WEIGHT", "PFLEX_MIN_THROUGHPUT"};

static int check_option(int val, const char *value, char *msg, size_t len) {
  switch (val) {
  case OPT_CLASS: return pflex_spank_opt_class(&conf, value, &opts, msg, len);
  case OPT_WEIGHT: return pflex_spank_opt_weight(value, &opts, msg, len);
  case OPT_MIN_TPUT: return pflex_spank_opt_min_tput(value, &opts, msg, len);
  default: snprintf(msg, len, "unknown option %d", val); return -EINVAL;
  }
}

/* Called where the option is given and again on the node (remote). A
 * negative return makes sbatch/srun/salloc refuse the submission. On the
 * node a value the submission host accepted but the node's plugstack.conf
 * does not (configurations out of step) is logged, and the job runs without
 * it rather than fail at launch. In the prolog and epilog Slurm calls this
 * before the plugin has seen its arguments (no slurm_spank_init there): the
 * prolog checks the options itself then. */
static int on_option(int val, const char *optarg, int remote) {
  char msg[PFLEX_SPANK_MSG_MAX];
  if (!conf_loaded) return 0;
  if (check_option(val, optarg, msg, sizeof msg) == 0) return 0;
  slurm_error("pflex: %s%s", msg, remote ? " (on this node; the job runs without it)" : "");
  return remote ? 0 : -1;
}

/* The plugstack.conf arguments, once per process. */
static int load_conf(int ac, char **av) {
  char msg[PFLEX_SPANK_MSG_MAX];
  if (conf_loaded) return 0;
  pflex_spank_conf_init(&conf);
  if (pflex_spank_conf_parse(&conf, ac, av, msg, sizeof msg)) {
    slurm_error("pflex: %s (PlugStackConfig)", msg);
    return -1;
  }
  conf_loaded = true;
  return 0;
}

EXPORT int slurm_spank_init(spank_t sp, int ac, char **av) {
  if (load_conf(ac, av)) return -1;
  for (struct spank_option *o = options; o->name; o++) {
    spank_err_t rc = spank_option_register(sp, o);
    if (rc != ESPANK_SUCCESS) {
      slurm_error("pflex: cannot register --%s: %s", o->name, spank_strerror(rc));
      return -1;
    }
  }
  return 0;
}

/* In the job's steps: the options as environment variables of its tasks. */
EXPORT int slurm_spank_user_init(spank_t sp, int ac, char **av) {
  char v[3][PFLEX_SPANK_CLASS_MAX + 32];
  snprintf(v[0], sizeof v[0], "%s", opts.class_name);
  snprintf(v[1], sizeof v[1], "%g", opts.weight);
  snprintf(v[2], sizeof v[2], "%g", opts.min_tput);
  const bool given[3] = {opts.has_class, opts.has_weight, opts.has_min_tput};
  for (int k = 0; k < 3; k++)
    if (given[k] && spank_setenv(sp, env_names[k], v[k], 1) != ESPANK_SUCCESS)
      slurm_error("pflex: cannot set %s in the job's environment", env_names[k]);
  return 0;
}

/* The job id as text, from Slurm, else from the prolog's environment. */
static int job_id(spank_t sp, char *buf, size_t len) {
  uint32_t id;
  if (spank_get_item(sp, S_JOB_ID, &id) == ESPANK_SUCCESS)
    snprintf(buf, len, "%" PRIu32, id);
  else if (getenv("SLURM_JOB_ID"))
    snprintf(buf, len, "%s", getenv("SLURM_JOB_ID"));
  else
    return -ENOENT;
  return pflex_spank_job_id_ok(buf) ? 0 : -EINVAL;
}

/* The options the job was submitted with, as the prolog sees them. */
static void job_options(spank_t sp) {
  for (struct spank_option *o = options; o->name; o++) {
    char *value = NULL, msg[PFLEX_SPANK_MSG_MAX];
    if (spank_option_getopt(sp, o, &value) == ESPANK_SUCCESS &&
        check_option(o->val, value, msg, sizeof msg))
      slurm_error("pflex: %s", msg);
  }
}

static void describe_options(char *buf, size_t len) {
  snprintf(buf, len, "class %s, weight %g, min throughput %g",
           opts.has_class ? opts.class_name : "(none)", opts.has_weight ? opts.weight : 1.0,
           opts.has_min_tput ? opts.min_tput : 0.0);
}

static int prolog_failed(const char *job, const char *msg) {
  bool fail = conf.on_error == PFLEX_SPANK_ON_ERROR_FAIL;
  slurm_error("pflex: job %s: %s; %s", job, msg,
              fail ? "failing the prolog (on_error=fail)"
                   : "the job runs without pflexd knowing its GPUs (on_error=log)");
  return fail ? -1 : 0;
}

/* Slurm gave these GPUs to this job alone: a job pflexd still lists on them
 * is one whose epilog never reached pflexd. Unregisters those (pflexd
 * restores their GPUs) so that the job's registration can go through. */
static int drop_stale(const char *job, const unsigned *gpus, size_t n, char *msg, size_t len) {
  char ids[PFLEX_SPANK_MAX_GPUS][PFLEX_SPANK_JOB_ID_MAX + 1];
  size_t nids = 0;
  int err =
      pflex_spank_agent_holders(&conf, job, gpus, n, ids, PFLEX_SPANK_MAX_GPUS, &nids, msg, len);
  for (size_t k = 0; !err && k < nids; k++) {
    err = pflex_spank_agent_delete_job(&conf, ids[k], msg, len);
    if (err == -ENOENT) err = 0; /* gone meanwhile */
    if (!err)
      slurm_info("pflex: job %s: unregistered stale job %s from its GPUs (its epilog never "
                 "reached pflexd)",
                 job, ids[k]);
  }
  return err;
}

/* PUT the job; on a clash with a stale job, drop it and try once more. */
static int register_job(const char *job, const unsigned *gpus, size_t n, char *msg, size_t len) {
  int err = pflex_spank_agent_put_job(&conf, job, gpus, n, &opts, msg, len);
  if (err != -EBUSY) return err;
  slurm_info("pflex: job %s: %s", job, msg);
  err = drop_stale(job, gpus, n, msg, len);
  return err ? err : pflex_spank_agent_put_job(&conf, job, gpus, n, &opts, msg, len);
}

EXPORT int slurm_spank_job_prolog(spank_t sp, int ac, char **av) {
  char job[80], msg[PFLEX_SPANK_MSG_MAX], what[PFLEX_SPANK_MSG_MAX];
  unsigned gpus[PFLEX_SPANK_MAX_GPUS];
  size_t n = 0;
  if (load_conf(ac, av)) return prolog_failed("?", "bad plugstack.conf arguments");
  if (job_id(sp, job, sizeof job)) return prolog_failed("?", "no usable job id");
  job_options(sp);
  const char *list = getenv("SLURM_JOB_GPUS");
  if (!list || !*list) {
    slurm_debug("pflex: job %s has no GPUs on this node: nothing to register", job);
    return 0;
  }
  if (pflex_spank_parse_gpus(list, gpus, PFLEX_SPANK_MAX_GPUS, &n, msg, sizeof msg))
    return prolog_failed(job, msg);
  if (conf.mapping_dir[0] &&
      pflex_spank_mapdir_write(conf.mapping_dir, job, gpus, n, msg, sizeof msg))
    slurm_error("pflex: job %s: %s; a pflexd restarted during the job will not know it", job, msg);
  if (register_job(job, gpus, n, msg, sizeof msg)) return prolog_failed(job, msg);
  describe_options(what, sizeof what);
  slurm_info("pflex: job %s: GPUs %s registered with pflexd (%s)", job, list, what);
  return 0;
}

/* After the DELETE: removed earlier, pflexd would unmap the GPUs without
 * restoring them, and a pflexd that only knows the job from the directory
 * (restarted during it) would then answer 404. */
static void clear_mapping(const char *job) {
  char msg[PFLEX_SPANK_MSG_MAX];
  size_t removed = 0;
  if (!conf.mapping_dir[0]) return;
  if (pflex_spank_mapdir_clear(conf.mapping_dir, job, &removed, msg, sizeof msg))
    slurm_error("pflex: job %s: %s", job, msg);
  else
    slurm_debug("pflex: job %s: %zu job mapping entries removed", job, removed);
}

/* Always succeeds: a failed epilog would drain the node, and a GPU whose job
 * pflexd never hears the end of still returns to its limit when its lease
 * runs out (pflexd's leases and reconciliation, docs/agent.md). */
EXPORT int slurm_spank_job_epilog(spank_t sp, int ac, char **av) {
  char job[80], msg[PFLEX_SPANK_MSG_MAX];
  if (load_conf(ac, av)) {
    slurm_error("pflex: epilog: bad plugstack.conf arguments: nothing unregistered");
    return 0;
  }
  if (job_id(sp, job, sizeof job)) {
    slurm_error("pflex: epilog without a usable job id: nothing unregistered");
    return 0;
  }
  const char *list = getenv("SLURM_JOB_GPUS");
  if (!list || !*list) return 0; /* the prolog registered nothing */
  int err = pflex_spank_agent_delete_job(&conf, job, msg, sizeof msg);
  if (err == 0)
    slurm_info("pflex: job %s: GPUs %s unregistered; pflexd restores their limits", job, list);
  else if (err == -ENOENT)
    slurm_info("pflex: job %s: pflexd does not know the job (its prolog did not register it)", job);
  else
    slurm_error("pflex: job %s: could not unregister GPUs %s: %s; pflexd restores them when it "
                "reconciles",
                job, list, msg);
  clear_mapping(job);
  return 0;
}
