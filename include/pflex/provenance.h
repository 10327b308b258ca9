/* Provenance: where the numbers of a data set come from (docs/formats.md,
 * "Provenance"). Every output of pflex says it, carried from its input and
 * never upgraded: a mix of kinds is as weak as its weakest member, and a
 * source that does not say is unknown, never taken as measured. */
#ifndef PFLEX_PROVENANCE_H
#define PFLEX_PROVENANCE_H

#include <stddef.h>

/* Zero is unknown, so a zeroed struct holding one claims nothing. */
enum pflex_provenance {
  PFLEX_PROV_UNKNOWN = 0,   /* not declared */
  PFLEX_PROV_MEASURED,      /* measured on real hardware (pflex sweep, NVML) */
  PFLEX_PROV_SIMULATED,     /* pflex's GPU and job model (the twin, the sim backend) */
  PFLEX_PROV_RECONSTRUCTED, /* modelled to reproduce published numbers (the reference set) */
};

/* The name written in files ("unknown", "measured", "simulated", "reconstructed"). */
const char *pflex_provenance_name(enum pflex_provenance p);

/* Parses a name (any case, surrounding blanks ignored). -EINVAL when s is
 * not one of the names; *ret is written only on success. */
int pflex_provenance_parse(const char *s, enum pflex_provenance *ret);

/* The provenance of data made from both a and b: the weaker of the two, in
 * the order reconstructed < simulated < unknown < measured. */
enum pflex_provenance pflex_provenance_combine(enum pflex_provenance a, enum pflex_provenance b);

/* One line for tables and figures: the name and what it means, e.g.
 * "reconstructed (modelled from published numbers, not measured)". */
const char *pflex_provenance_note(enum pflex_provenance p);

#endif
