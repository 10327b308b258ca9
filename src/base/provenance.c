/* Provenance names, their order and their notes (include/pflex/provenance.h). */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "pflex/provenance.h"

/* Indexed by enum pflex_provenance; rank: lower is weaker. */
static const struct {
  const char *name;
  int rank;
  const char *note;
} kinds[] = {
    [PFLEX_PROV_UNKNOWN] = {"unknown", 2, "unknown (the input does not say; not taken as measured)"},
    [PFLEX_PROV_MEASURED] = {"measured", 3, "measured"},
    [PFLEX_PROV_SIMULATED] = {"simulated", 1, "simulated (pflex's GPU and job model, not measured)"},
    [PFLEX_PROV_RECONSTRUCTED] = {"reconstructed", 0,
                                  "reconstructed (modelled from published numbers, not measured)"},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

static size_t index_of(enum pflex_provenance p) {
  return (size_t)p < NKINDS ? (size_t)p : PFLEX_PROV_UNKNOWN;
}

const char *pflex_provenance_name(enum pflex_provenance p) {
  return kinds[index_of(p)].name;
}

const char *pflex_provenance_note(enum pflex_provenance p) {
  return kinds[index_of(p)].note;
}

int pflex_provenance_parse(const char *s, enum pflex_provenance *ret) {
  if (!s) return -EINVAL;
  while (*s == ' ' || *s == '\t') s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  for (size_t k = 0; k < NKINDS; k++)
    if (strlen(kinds[k].name) == n && strncasecmp(s, kinds[k].name, n) == 0) {
      *ret = (enum pflex_provenance)k;
      return 0;
    }
  return -EINVAL;
}

enum pflex_provenance pflex_provenance_combine(enum pflex_provenance a, enum pflex_provenance b) {
  return kinds[index_of(a)].rank <= kinds[index_of(b)].rank ? (enum pflex_provenance)index_of(a)
                                                            : (enum pflex_provenance)index_of(b);
}
