/* The table of GPU types pflex knows (include/pflex/gpu_models.h). Every
 * number has its public source, or is marked an estimate, in docs/gpus.md;
 * the H100 and H200 rows are the values pflex used before the table (paper.md
 * section 7: limits 200-700 W, idle 72-86 W on the H100, 75 W on the H200),
 * so results on the reference set do not change. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/gpu_models_data.h"
#include "pflex/gpu_models.h"

enum form { FORM_SXM = 0, FORM_PCIE, FORM_NVL, FORM_ANY /* comes in one form only */ };

struct entry {
  const char *chip;   /* first word of the name after NVIDIA / Tesla */
  enum form form;     /* board form the name says (no PCIe / NVL word: SXM) */
  const char *memory; /* memory word that selects this row, NULL: any */
  struct pflex_gpu_model m;
};

#define LMIN PFLEX_GPU_EST_LIMIT_MIN
#define IDLE PFLEX_GPU_EST_IDLE

/* chip, form, memory, {name, long name, min, max, default, idle (core/gpu_models_data.h),
 * estimates} */
// clang-format off
static const struct entry table[] = {
    {"P100", FORM_PCIE, NULL, {"P100-PCIE", "NVIDIA Tesla P100 PCIe 16GB", PFLEX__GPU_P100_PCIE, LMIN | IDLE}},
    {"P100", FORM_SXM, NULL, {"P100", "NVIDIA Tesla P100 SXM2 16GB", PFLEX__GPU_P100, LMIN | IDLE}},
    {"V100", FORM_PCIE, NULL, {"V100-PCIE", "NVIDIA Tesla V100 PCIe 32GB", PFLEX__GPU_V100_PCIE, LMIN | IDLE}},
    {"V100", FORM_SXM, NULL, {"V100", "NVIDIA Tesla V100 SXM2 32GB", PFLEX__GPU_V100, IDLE}},
    {"T4", FORM_ANY, NULL, {"T4", "NVIDIA T4 16GB", PFLEX__GPU_T4, LMIN | IDLE}},
    {"A10", FORM_ANY, NULL, {"A10", "NVIDIA A10 24GB", PFLEX__GPU_A10, LMIN | IDLE}},
    {"A40", FORM_ANY, NULL, {"A40", "NVIDIA A40 48GB", PFLEX__GPU_A40, IDLE}},
    {"A100", FORM_PCIE, "40GB", {"A100-PCIE-40GB", "NVIDIA A100 PCIe 40GB", PFLEX__GPU_A100_PCIE_40GB, LMIN | IDLE}},
    {"A100", FORM_PCIE, NULL, {"A100-PCIE", "NVIDIA A100 PCIe 80GB", PFLEX__GPU_A100_PCIE, LMIN | IDLE}},
    {"A100", FORM_SXM, NULL, {"A100", "NVIDIA A100 SXM4 80GB", PFLEX__GPU_A100, IDLE}},
    {"L40S", FORM_ANY, NULL, {"L40S", "NVIDIA L40S 48GB", PFLEX__GPU_L40S, LMIN | IDLE}},
    {"H100", FORM_PCIE, NULL, {"H100-PCIE", "NVIDIA H100 PCIe 80GB", PFLEX__GPU_H100_PCIE, LMIN | IDLE}},
    {"H100", FORM_NVL, NULL, {"H100-NVL", "NVIDIA H100 NVL 94GB", PFLEX__GPU_H100_NVL, LMIN | IDLE}},
    {"H100", FORM_SXM, NULL, {"H100", "NVIDIA H100 SXM5 80GB", PFLEX__GPU_H100, 0}},
    {"H200", FORM_NVL, NULL, {"H200-NVL", "NVIDIA H200 NVL 141GB", PFLEX__GPU_H200_NVL, LMIN | IDLE}},
    {"H200", FORM_SXM, NULL, {"H200", "NVIDIA H200 SXM 141GB", PFLEX__GPU_H200, 0}},
    {"B200", FORM_SXM, NULL, {"B200", "NVIDIA B200 SXM 180GB", PFLEX__GPU_B200, LMIN | IDLE}},
    {"GB200", FORM_SXM, NULL, {"GB200", "NVIDIA GB200 (Blackwell GPU) 186GB", PFLEX__GPU_GB200, LMIN | IDLE}},
};
// clang-format on
#define NTABLE (sizeof table / sizeof table[0])

size_t pflex_gpu_model_count(void) {
  return NTABLE;
}

const struct pflex_gpu_model *pflex_gpu_model_get(size_t i) {
  return i < NTABLE ? &table[i].m : NULL;
}

#define MAX_WORDS 8
#define WORD_LEN 24

/* Splits name into upper-case words at spaces, '-' and '_', dropping a
 * leading "NVIDIA" and "Tesla"; returns the count. */
static size_t words(const char *name, char w[MAX_WORDS][WORD_LEN]) {
  size_t n = 0;
  while (*name && n < MAX_WORDS) {
    while (*name == ' ' || *name == '-' || *name == '_')
      name++;
    size_t len = 0;
    while (*name && *name != ' ' && *name != '-' && *name != '_') {
      if (len + 1 < WORD_LEN) w[n][len++] = (char)toupper((unsigned char)*name);
      name++;
    }
    if (!len) break;
    w[n][len] = '\0';
    if (n == 0 && (strcmp(w[0], "NVIDIA") == 0 || strcmp(w[0], "TESLA") == 0)) continue;
    n++;
  }
  return n;
}

static bool has_word(char w[MAX_WORDS][WORD_LEN], size_t n, const char *word) {
  for (size_t i = 1; i < n; i++)
    if (strcmp(w[i], word) == 0) return true;
  return false;
}

const struct pflex_gpu_model *pflex_gpu_model_find(const char *name) {
  if (!name) return NULL;
  char w[MAX_WORDS][WORD_LEN];
  size_t n = words(name, w);
  if (n == 0) return NULL;
  enum form form = has_word(w, n, "PCIE") ? FORM_PCIE : has_word(w, n, "NVL") ? FORM_NVL : FORM_SXM;
  const struct entry *best = NULL;
  for (size_t i = 0; i < NTABLE; i++) {
    const struct entry *e = &table[i];
    if (strcmp(e->chip, w[0]) != 0 || (e->form != form && e->form != FORM_ANY)) continue;
    if (e->memory && !has_word(w, n, e->memory)) continue;
    if (!best || (e->memory && !best->memory)) best = e;
  }
  return best ? &best->m : NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double pflex_gpu_idle_share(void) {
  double share[NTABLE];
  size_t n = 0;
  for (size_t i = 0; i < NTABLE; i++)
    share[n++] = table[i].m.idle_w / table[i].m.default_limit_w;
  qsort(share, n, sizeof *share, cmp_double);
  return n % 2 ? share[n / 2] : 0.5 * (share[n / 2 - 1] + share[n / 2]);
}

int pflex_gpu_limits_resolve(const char *gpu, double data_min_w, double data_max_w,
                             struct pflex_gpu_limits *ret) {
  if (!ret) return -EINVAL;
  const struct pflex_gpu_model *m = pflex_gpu_model_find(gpu);
  if (m) {
    *ret = (struct pflex_gpu_limits){.min_w = m->limit_min_w,
                                     .default_w = m->default_limit_w,
                                     .max_w = m->limit_max_w,
                                     .idle_w = m->idle_w,
                                     .known = true};
    return 0;
  }
  if (!(data_min_w > 0) || !(data_max_w >= data_min_w) || !isfinite(data_max_w)) return -EINVAL;
  *ret = (struct pflex_gpu_limits){.min_w = data_min_w,
                                   .default_w = data_max_w,
                                   .max_w = data_max_w,
                                   .idle_w = pflex_gpu_idle_share() * data_max_w,
                                   .known = false};
  return 0;
}

double pflex_gpu_cap_relative(double ref_w, double lo_w, double hi_w) {
  /* Multiply before dividing: for lo 200 and hi 700 the result is ref_w to the bit. */
  return lo_w + (ref_w - 200.0) * (hi_w - lo_w) / 500.0;
}
