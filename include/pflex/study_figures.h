/* The study's figures (report layer, PLplot through plot.h): Fig. 8 and
 * Fig. 4 of the paper, from the results and data of the study
 * (study.h, study_predict.h). */
#ifndef PFLEX_STUDY_FIGURES_H
#define PFLEX_STUDY_FIGURES_H

#include <stddef.h>

#include "pflex/study.h"
#include "pflex/study_predict.h"

/* Fig. 8: throughput relative to the oracle by cut, small multiples: one
 * column per scenario (bits of `scenarios`), one row per question, each
 * with its own y range and legend: (a) every strategy (pfi and optimal with
 * d's headline and optimal predictions), (b) pfi by prediction, (c) optimal
 * by prediction, (d) when r holds closed-loop rounds, optimal's held-out
 * predictions round by round. A row without results is left out. Title, and
 * d->jobs.provenance as a note under the panels. The format follows path's
 * extension; -EINVAL when no row has results. */
int pflex_study_fig8(const struct pflex_study_result *r, size_t n, const double *cuts,
                     size_t ncuts, unsigned scenarios, const struct pflex_study_data *d,
                     const char *path);

/* Fig. 4: PFI by group, the runs' (labelled with d->jobs.provenance) and
 * predicted (each prediction family the data holds), groups sorted by the
 * runs' PFI and named on the x axis; the provenance as a note. */
int pflex_study_fig4(const struct pflex_study_data *d, const char *path);

/* Writes fig8.svg, fig4.svg, fig8.png, fig4.png into dir. On failure returns
 * the error with the file it was writing in failed_path (size bytes). */
int pflex_study_figures(const char *dir, const struct pflex_study_result *r, size_t n,
                        const double *cuts, size_t ncuts, unsigned scenarios,
                        const struct pflex_study_data *d, char *failed_path, size_t size);

#endif
