/* In-memory runsets and sweep groups (include/pflex/runs.h). No I/O here:
 * reading and writing CSV lives in src/io/runs_csv.c. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/arena.h"
#include "base/fnv.h"
#include "core/sort_index.h"
#include "pflex/gpu_models.h"
#include "pflex/runs.h"

void pflex_runset_init(struct pflex_runset *set) {
  memset(set, 0, sizeof *set);
}

static void drop_cache(struct pflex_runset *set);

/* A run's strings live in its runset's arena (set->strings, freed with
 * it); only its array of extra cells is its own (columns added later grow
 * it in place). */
void pflex_runset_release(struct pflex_runset *set) {
  if (!set) return;
  for (size_t i = 0; i < set->n; i++)
    free(set->runs[i].extra);
  free(set->runs);
  pflex__arena_free(set->strings);
  for (size_t k = 0; k < set->nextra; k++)
    free(set->extra_names[k]);
  free(set->extra_names);
  free(set->source);
  drop_cache(set);
  pflex_runset_init(set);
}

static size_t len_or_zero(const char *s) {
  return s ? strlen(s) + 1 : 0;
}

static const char *extra_cell(const struct pflex_run *run, size_t k) {
  return run->extra && run->extra[k] ? run->extra[k] : "";
}

/* s (n bytes with its NUL; 0: NULL) copied to *at, which moves on past it. */
static char *put(char **at, const char *s, size_t n) {
  if (!n) return NULL;
  char *c = memcpy(*at, s, n);
  *at += n;
  return c;
}

/* A copy of s in the runset's arena. */
static char *keep_string(struct pflex_runset *set, const char *s) {
  size_t n = strlen(s) + 1;
  char *c = pflex__arena_alloc(&set->strings, n);
  return c ? memcpy(c, s, n) : NULL;
}

int pflex_runset_find_column(const struct pflex_runset *set, const char *name, size_t *ret_index) {
  for (size_t k = 0; k < set->nextra; k++)
    if (strcmp(set->extra_names[k], name) == 0) {
      if (ret_index) *ret_index = k;
      return 0;
    }
  return -ENOENT;
}

static void groups_memo_free(struct pflex__runs_groups *m);

static void drop_cache(struct pflex_runset *set) {
  free(set->over_one);
  set->over_one = NULL;
  groups_memo_free(set->groups_memo);
  set->groups_memo = NULL;
}

int pflex_runset_add_column(struct pflex_runset *set, const char *name, size_t *ret_index) {
  if (pflex_runset_find_column(set, name, ret_index) == 0) return 0;
  drop_cache(set);
  char *copy = strdup(name);
  /* Every run's new cell is this one empty string (run strings are never
   * changed in place, nor freed on their own). */
  char *empty = copy ? keep_string(set, "") : NULL;
  char **names = empty ? realloc(set->extra_names, (set->nextra + 1) * sizeof *names) : NULL;
  if (!names) {
    free(copy);
    return -ENOMEM;
  }
  set->extra_names = names;
  /* Grow every run's extra array by one cell; on failure the arrays grown
   * so far keep their unused room and nextra is unchanged, so the runset
   * stays as it was. */
  for (size_t i = 0; i < set->n; i++) {
    char **ex = realloc(set->runs[i].extra, (set->nextra + 1) * sizeof *ex);
    if (!ex) {
      free(copy);
      return -ENOMEM;
    }
    set->runs[i].extra = ex;
  }
  for (size_t i = 0; i < set->n; i++)
    set->runs[i].extra[set->nextra] = empty;
  names[set->nextra] = copy;
  if (ret_index) *ret_index = set->nextra;
  set->nextra++;
  return 0;
}

int pflex_runset_append(struct pflex_runset *set, const struct pflex_run *run) {
  if (!run->group || !run->gpu) return -EINVAL;
  drop_cache(set);
  if (set->n == set->cap_runs) {
    size_t cap = set->cap_runs ? 2 * set->cap_runs : 64;
    struct pflex_run *runs = realloc(set->runs, cap * sizeof *runs);
    if (!runs) return -ENOMEM;
    set->runs = runs;
    set->cap_runs = cap;
  }
  /* Every string of the run in one block of the arena, its extra cells in
   * an array of its own. */
  size_t lg = strlen(run->group) + 1, lu = strlen(run->gpu) + 1, lm = len_or_zero(run->model),
         ls = len_or_zero(run->set), total = lg + lu + lm + ls;
  for (size_t k = 0; k < set->nextra; k++)
    total += strlen(extra_cell(run, k)) + 1;
  struct pflex_run r = *run;
  r.extra = set->nextra ? malloc(set->nextra * sizeof *r.extra) : NULL;
  char *at = r.extra || !set->nextra ? pflex__arena_alloc(&set->strings, total) : NULL;
  if (!at) {
    free(r.extra);
    return -ENOMEM;
  }
  r.group = put(&at, run->group, lg);
  r.gpu = put(&at, run->gpu, lu);
  r.model = put(&at, run->model, lm);
  r.set = put(&at, run->set, ls);
  for (size_t k = 0; k < set->nextra; k++) {
    const char *v = extra_cell(run, k);
    r.extra[k] = put(&at, v, strlen(v) + 1);
  }
  set->runs[set->n++] = r;
  return 0;
}

int pflex_runset_set_extra(struct pflex_runset *set, size_t i, const char *name,
                           const char *value) {
  if (i >= set->n) return -EINVAL;
  size_t k;
  int err = pflex_runset_add_column(set, name, &k);
  if (err) return err;
  char *v = keep_string(set, value ? value : "");
  if (!v) return -ENOMEM;
  drop_cache(set);
  set->runs[i].extra[k] = v; /* the old value stays in the arena until the runset goes */
  return 0;
}

/* A cell as a finite number: 0, -ENODATA when empty, -EINVAL when not a number. */
static int parse_cell(const char *s, double *ret) {
  if (!s || !*s) return -ENODATA;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  while (*end == ' ')
    end++;
  if (end == s || *end || errno == ERANGE || !isfinite(v)) return -EINVAL;
  *ret = v;
  return 0;
}

int pflex_runset_metric(const struct pflex_runset *set, size_t i, const char *name, double *ret) {
  if (i >= set->n) return -EINVAL;
  size_t k;
  if (pflex_runset_find_column(set, name, &k)) return -ENOENT;
  return parse_cell(set->runs[i].extra[k], ret);
}

bool pflex_runset_column_over_one(const struct pflex_runset *set, size_t k) {
  if (k >= set->nextra) return false;
  /* The cache is the runset's own, filled on demand: casting const away is
   * sound (no runset is defined const) and changes nothing a caller sees. */
  struct pflex_runset *s = (struct pflex_runset *)set;
  if (!s->over_one) s->over_one = calloc(set->nextra, 1);
  if (s->over_one && s->over_one[k]) return s->over_one[k] == 2;
  bool over = false;
  for (size_t i = 0; i < set->n && !over; i++) {
    double v;
    over = parse_cell(set->runs[i].extra[k], &v) == 0 && v > 1.0;
  }
  if (s->over_one) s->over_one[k] = over ? 2 : 1;
  return over;
}

/* FNV-1a: group names are short strings; the table below needs only a
 * well-spread hash, not a keyed one (a runs file is the user's own). */
static size_t name_hash(const char *s) {
  uint64_t h = pflex__fnv1a_str(PFLEX__FNV1A_INIT, s);
  return (size_t)(h ^ (h >> 29));
}

/* Sorts a group's run indexes by cap ascending, equal caps in index order (as
 * pflex__sort_index): insertion sort for the usual few runs, else that. */
static int sort_by_cap(size_t *idx, size_t n, const struct pflex_run *runs) {
  if (n > 16)
    return pflex__sort_index(idx, n, runs, sizeof *runs, offsetof(struct pflex_run, cap_w));
  for (size_t k = 1; k < n; k++) {
    size_t v = idx[k], m = k;
    while (m > 0 && (runs[idx[m - 1]].cap_w > runs[v].cap_w ||
                     (runs[idx[m - 1]].cap_w == runs[v].cap_w && idx[m - 1] > v))) {
      idx[m] = idx[m - 1];
      m--;
    }
    idx[m] = v;
  }
  return 0;
}

/* A slot of the group-name table below: the name's full hash and the
 * group's name beside its number, so that a probe reads one slot and, on a
 * full-hash match, one string (not the group's first run: on a large file
 * those lie all over memory). */
struct name_slot {
  size_t hash, group;
  const char *name;
};

/* A table of n empty slots (n a power of two), then old's groups placed in
 * it; old (of nold slots, NULL for none) is freed. */
static struct name_slot *new_slots(size_t n, struct name_slot *old, size_t nold) {
  struct name_slot *t = malloc(n * sizeof *t);
  if (t) {
    for (size_t h = 0; h < n; h++)
      t[h].group = SIZE_MAX;
    for (size_t o = 0; o < nold; o++) {
      if (old[o].group == SIZE_MAX) continue;
      size_t h = old[o].hash & (n - 1);
      while (t[h].group != SIZE_MAX)
        h = (h + 1) & (n - 1);
      t[h] = old[o];
    }
  }
  free(old);
  return t;
}

/* owner[i] = the group of run i, groups numbered in order of first appearance,
 * by an open-addressing hash table of group names (at most half full, sized
 * by the groups, not the runs): expected linear time. */
static int assign_owners(const struct pflex_runset *set, size_t *owner, size_t *ret_ng,
                         size_t **ret_first) {
  size_t nslots = 16, ng = 0;
  struct name_slot *slot = new_slots(nslots, NULL, 0);
  size_t *first = malloc((set->n ? set->n : 1) * sizeof *first); /* group -> its first run */
  for (size_t i = 0; i < set->n && slot && first; i++) {
    const char *name = set->runs[i].group;
    size_t hash = name_hash(name), h = hash & (nslots - 1);
    while (slot[h].group != SIZE_MAX && (slot[h].hash != hash || strcmp(slot[h].name, name) != 0))
      h = (h + 1) & (nslots - 1);
    if (slot[h].group == SIZE_MAX) {
      slot[h] = (struct name_slot){hash, ng, name};
      first[ng++] = i;
    }
    owner[i] = slot[h].group;
    if (2 * ng > nslots) {
      slot = new_slots(2 * nslots, slot, nslots);
      nslots *= 2;
    }
  }
  if (!slot || !first) {
    free(slot);
    free(first);
    return -ENOMEM;
  }
  free(slot);
  *ret_ng = ng;
  *ret_first = first;
  return 0;
}

/* Which group each run is in, kept in the runset for the next
 * pflex_runset_groups (a command asks up to five times: the checks, the
 * reference notes, the jobs) until the runset changes (drop_cache). */
struct pflex__runs_groups {
  size_t n, ng;  /* runs and groups it was made for */
  size_t *owner; /* per run, its group */
  size_t *first; /* per group, its first run */
};

static void groups_memo_free(struct pflex__runs_groups *m) {
  if (!m) return;
  free(m->owner);
  free(m->first);
  free(m);
}

/* The runset's grouping, made now or kept from an earlier call. As with
 * over_one, casting const away is sound: no runset is defined const, and
 * the memo changes nothing a caller sees. NULL when memory runs out. */
static const struct pflex__runs_groups *groups_memo(const struct pflex_runset *set) {
  struct pflex_runset *s = (struct pflex_runset *)set;
  if (s->groups_memo && s->groups_memo->n == set->n) return s->groups_memo;
  struct pflex__runs_groups *m = calloc(1, sizeof *m);
  if (m) m->owner = malloc((set->n ? set->n : 1) * sizeof *m->owner);
  if (!m || !m->owner || assign_owners(set, m->owner, &m->ng, &m->first)) {
    groups_memo_free(m);
    return NULL;
  }
  m->n = set->n;
  groups_memo_free(s->groups_memo);
  s->groups_memo = m;
  return m;
}

int pflex_runset_groups(const struct pflex_runset *set, struct pflex_group **ret_groups,
                        size_t *ret_n) {
  const struct pflex__runs_groups *m = groups_memo(set);
  if (!m) return -ENOMEM;
  const size_t *owner = m->owner, *first = m->first;
  size_t ng = m->ng;
  struct pflex_group *g = calloc(ng ? ng : 1, sizeof *g);
  if (!g) return -ENOMEM;
  for (size_t j = 0; j < ng; j++)
    g[j].name = set->runs[first[j]].group;
  for (size_t i = 0; i < set->n; i++)
    g[owner[i]].n++;
  for (size_t j = 0; j < ng; j++) {
    if (!(g[j].runs = malloc(g[j].n * sizeof *g[j].runs))) goto fail;
    g[j].n = 0;
  }
  for (size_t i = 0; i < set->n; i++)
    g[owner[i]].runs[g[owner[i]].n++] = i;
  for (size_t j = 0; j < ng; j++) {
    if (sort_by_cap(g[j].runs, g[j].n, set->runs)) goto fail;
    g[j].uncapped = g[j].runs[g[j].n - 1];
  }
  *ret_groups = g;
  *ret_n = ng;
  return 0;
fail:
  pflex_groups_free(g, ng);
  return -ENOMEM;
}

void pflex_groups_free(struct pflex_group *groups, size_t n) {
  if (!groups) return;
  for (size_t j = 0; j < n; j++)
    free(groups[j].runs);
  free(groups);
}

/* Names run r for a message: its line when it came from a file with lines
 * (CSV), else its 1-based position in the runset (JSON). */
static size_t run_number(const struct pflex_runset *set, const struct pflex_run *r) {
  return r->line ? r->line : (size_t)(r - set->runs) + 1;
}

static int group_fail(const struct pflex_runset *set, const struct pflex_run *r, int err,
                      const char *column, const char *msg, struct pflex_diag *diag) {
  if (r->line) return pflex_diag_set(diag, err, set->source, r->line, column, "%s", msg);
  return pflex_diag_set(diag, err, set->source, 0, column, "run %zu: %s", run_number(set, r), msg);
}

int pflex_runset_check_groups(const struct pflex_runset *set, bool partial,
                              struct pflex_diag *diag) {
  struct pflex_group *g;
  size_t ng;
  char msg[200];
  int err = pflex_runset_groups(set, &g, &ng);
  if (err) return err;
  for (size_t j = 0; j < ng && !err; j++) {
    /* Compare with the group's first run in the file, so the error names the later one. */
    const struct pflex_run *first = &set->runs[g[j].runs[0]];
    for (size_t k = 1; k < g[j].n; k++)
      if (run_number(set, &set->runs[g[j].runs[k]]) < run_number(set, first))
        first = &set->runs[g[j].runs[k]];
    for (size_t k = 0; k < g[j].n && !err; k++) {
      const struct pflex_run *r = &set->runs[g[j].runs[k]];
      if (strcmp(r->gpu, first->gpu) != 0) {
        snprintf(msg, sizeof msg, "group '%s' mixes GPU types '%s' and '%s'", r->group, first->gpu,
                 r->gpu);
        err = group_fail(set, r, -PFLEX_E_DATA, "gpu", msg, diag);
      } else if (r->gpus != first->gpus) {
        snprintf(msg, sizeof msg, "group '%s' mixes GPU counts %d and %d", r->group, first->gpus,
                 r->gpus);
        err = group_fail(set, r, -PFLEX_E_DATA, "gpus", msg, diag);
      } else if (k > 0 && r->cap_w == set->runs[g[j].runs[k - 1]].cap_w) {
        /* Equal caps sort in file order: prev comes first. */
        const struct pflex_run *prev = &set->runs[g[j].runs[k - 1]];
        snprintf(msg, sizeof msg, "group '%s' has cap %g W twice (%s %zu and %zu)", r->group,
                 r->cap_w, r->line ? "lines" : "runs", run_number(set, prev), run_number(set, r));
        err = group_fail(set, r, -PFLEX_E_DATA, "cap_w", msg, diag);
      }
    }
    if (err) break;
    /* A whole group (not runs added to a stored one) holds its uncapped run
     * when pflex knows its GPU's default limit (pflex/gpu_models.h). */
    const struct pflex_run *top = &set->runs[g[j].uncapped];
    const struct pflex_gpu_model *m = partial ? NULL : pflex_gpu_model_find(top->gpu);
    if (m && top->cap_w < m->default_limit_w) {
      snprintf(msg, sizeof msg,
               "group '%s' has no uncapped run: its highest cap is %g W, below the %s's %g W "
               "default limit",
               top->group, top->cap_w, top->gpu, m->default_limit_w);
      err = group_fail(set, top, -PFLEX_E_NOUNCAPPED, "cap_w", msg, diag);
    }
  }
  pflex_groups_free(g, ng);
  return err;
}

/* In enum order. The keys are part of the store schema and the runs JSON
 * format, the columns of the runs CSV format: never rename one. */
static const struct pflex_tput_unit_info tput_units[] = {
    {PFLEX_TPUT_TOKENS_PER_S, "tokens", "tokens/s", "tokens_per_s", "tokens_per_s", "tokens_sd",
     true},
    {PFLEX_TPUT_SAMPLES_PER_S, "samples", "samples/s", "samples_per_s", "samples_per_s",
     "samples_sd", false},
    {PFLEX_TPUT_STEPS_PER_S, "steps", "steps/s", "steps_per_s", "steps_per_s", "steps_sd", false},
    {PFLEX_TPUT_PER_STEP_TIME, "step-time", "1/(s per step)", "per_step_time", "s_per_step",
     "s_per_step_sd", false},
};
#define NTPUT_UNITS (sizeof tput_units / sizeof tput_units[0])

const struct pflex_tput_unit_info *pflex_tput_unit_at(size_t i) {
  return i < NTPUT_UNITS ? &tput_units[i] : NULL;
}

const struct pflex_tput_unit_info *pflex_tput_unit_info(enum pflex_tput_unit unit) {
  return (size_t)unit < NTPUT_UNITS ? &tput_units[unit] : NULL;
}

int pflex_tput_unit_parse(const char *name, enum pflex_tput_unit *ret_unit) {
  for (size_t i = 0; name && i < NTPUT_UNITS; i++)
    if (strcmp(name, tput_units[i].name) == 0) {
      *ret_unit = tput_units[i].unit;
      return 0;
    }
  return -EINVAL;
}

bool pflex_tput_unit_absolute(enum pflex_tput_unit unit) {
  const struct pflex_tput_unit_info *u = pflex_tput_unit_info(unit);
  return u && u->absolute;
}

const char *pflex_tput_unit_name(enum pflex_tput_unit unit) {
  const struct pflex_tput_unit_info *u = pflex_tput_unit_info(unit);
  return u ? u->label : "unknown";
}

const char *pflex_arch_name(enum pflex_arch arch) {
  return arch == PFLEX_ARCH_DENSE ? "dense" : arch == PFLEX_ARCH_MOE ? "moe" : "";
}

const char *pflex_task_name(enum pflex_task task) {
  return task == PFLEX_TASK_PT ? "pt" : task == PFLEX_TASK_FT ? "ft" : "";
}

int pflex_arch_parse(const char *s, enum pflex_arch *ret_arch) {
  if (!s) return -EINVAL;
  if (strcasecmp(s, "dense") == 0) return *ret_arch = PFLEX_ARCH_DENSE, 0;
  if (strcasecmp(s, "moe") == 0) return *ret_arch = PFLEX_ARCH_MOE, 0;
  return -EINVAL;
}

int pflex_task_parse(const char *s, enum pflex_task *ret_task) {
  static const char *const pt[] = {"pt", "pretrain", "pretraining"};
  static const char *const ft[] = {"ft", "lora", "sft", "finetune", "fine-tuning"};
  if (!s) return -EINVAL;
  for (size_t i = 0; i < sizeof pt / sizeof *pt; i++)
    if (strcasecmp(s, pt[i]) == 0) return *ret_task = PFLEX_TASK_PT, 0;
  for (size_t i = 0; i < sizeof ft / sizeof *ft; i++)
    if (strcasecmp(s, ft[i]) == 0) return *ret_task = PFLEX_TASK_FT, 0;
  return -EINVAL;
}
