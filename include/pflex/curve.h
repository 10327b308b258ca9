/* Power-throughput curves of one job: aggregate GPU power (W) -> throughput.
 *
 * Three kinds share one interface (eval, inverse, derivative, bounds):
 * - measured: monotone interpolation between measured (power, throughput)
 *   points. Noisy points that are not monotone are first made monotone by
 *   isotonic regression (pool-adjacent-violators: violating neighbours are
 *   replaced by their mean), then interpolated with Steffen's method, which is
 *   monotone and never overshoots the data (linear for two points, or on
 *   request). P_min is the lowest measured power, P_max the highest.
 * - parametric: a two-parameter family from the GPU physics of paper.md
 *   section 8 (see struct pflex_curve_params), fitted to points or built from a
 *   PFI value, so that a predicted PFI yields a whole curve.
 * - callback: any monotone function the caller supplies.
 * Every curve is clamped: below P_min it returns T(P_min) (a job cannot be
 * pushed lower), above P_max it is flat at T_max. Curves are immutable once
 * built, so one curve may be evaluated from several threads. */
#ifndef PFLEX_CURVE_H
#define PFLEX_CURVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pflex_curve_kind { PFLEX_CURVE_MEASURED = 0, PFLEX_CURVE_PARAMETRIC, PFLEX_CURVE_CALLBACK };

/* Interpolation between measured points. */
enum pflex_curve_interp {
  PFLEX_INTERP_STEFFEN = 0, /* monotone cubic, no overshoot (default) */
  PFLEX_INTERP_LINEAR,      /* piecewise linear */
};

/* One measured point: aggregate power, throughput, and the per-GPU cap it was
 * measured at (0 when unknown). */
struct pflex_curve_point {
  double power_w;
  double tput;
  double cap_w;
};

/* The physical family (paper.md section 8, a modelling hypothesis). With x the
 * SM clock as a fraction of its maximum (x = 1 uncapped):
 *   step time      tau(x) = c / x + (1 - c)          (c: compute share)
 *   throughput     T(x)   = T_max / tau(x)
 *   voltage        v(x)   = 1 below the knee k, rising linearly to vratio at x = 1
 *   board power    P(x)   = P_max * (s + (1 - s) * x v(x)^2 / vratio^2)
 * s is the share of P_max that does not scale with the SM clock: the GPUs'
 * idle power (gpus * idle_w / P_max). Free parameters: c in (0, 1] and
 * knee in [0, 1); s and vratio are fixed per GPU type. T(P) is concave. */
struct pflex_curve_params {
  double c;         /* compute share of step time, (0, 1] */
  double knee;      /* clock fraction below which voltage sits at its floor, [0, 1) */
  double idle_frac; /* s: share of P_max that cannot be shed, [0, 1) */
  double vratio;    /* voltage at full clock over voltage floor, >= 1 */
};

/* Default shape constants. The idle share comes from each GPU's idle power
 * in the GPU table (pflex/gpu_models.h; the H200's 75 W is kept here for the
 * simulated controller, pflex_gpu_model_find("H200")->idle_w is the same);
 * the voltage ratio and the knee are modelling choices (docs/allocation.md),
 * not measured facts. */
#define PFLEX_CURVE_IDLE_W_H200 75.0
#define PFLEX_CURVE_DEFAULT_VRATIO 1.4
#define PFLEX_CURVE_DEFAULT_KNEE 0.6

struct pflex_curve;

/* Callback curve: eval must be non-decreasing on [p_min, p_max]; deriv may be
 * NULL (then a central difference is used). */
struct pflex_curve_fn {
  double (*eval)(void *ctx, double power_w);
  double (*deriv)(void *ctx, double power_w);
  void *ctx;
};

/* Builds a measured curve from n >= 1 points (any order; equal powers are
 * averaged; non-monotone throughput is repaired by isotonic regression). The
 * points' caps, if all given, define the power -> cap mapping. -EINVAL on a
 * non-positive or non-finite power or throughput, -ENOMEM. */
int pflex_curve_new_measured(const struct pflex_curve_point *points, size_t n,
                             enum pflex_curve_interp interp, struct pflex_curve **ret_curve);

/* Builds a parametric curve on [p_min, p_max] with throughput t_max at p_max.
 * -EINVAL when parameters are out of range or p_min > p_max. */
int pflex_curve_new_parametric(const struct pflex_curve_params *params, double p_min, double p_max,
                               double t_max, struct pflex_curve **ret_curve);

/* Wraps a caller's function (fn is copied; ctx must outlive the curve). */
int pflex_curve_new_callback(const struct pflex_curve_fn *fn, double p_min, double p_max,
                             struct pflex_curve **ret_curve);

/* Frees a curve. Accepts NULL. */
void pflex_curve_free(struct pflex_curve *curve);

/* The curve's kind, and the power range it covers [P_min, P_max] in W. */
enum pflex_curve_kind pflex_curve_kind(const struct pflex_curve *curve);
double pflex_curve_p_min(const struct pflex_curve *curve);
double pflex_curve_p_max(const struct pflex_curve *curve);
/* Throughput at P_max. */
double pflex_curve_t_max(const struct pflex_curve *curve);

/* A 64-bit digest of what the curve is: its kind, range and points and
 * interpolation (measured), parameters (parametric) or function and context
 * pointers (callback). Curves with different digests differ; equal digests
 * mean the same curve, up to a 64-bit hash collision. For caches (the
 * allocator's pflex_alloc_ctx) that must not trust a pointer: a freed curve's
 * address may come back holding another. */
uint64_t pflex_curve_digest(const struct pflex_curve *curve);

/* True for a measured curve interpolated linearly (or with fewer than 3
 * points): then its points describe it exactly. */
bool pflex_curve_piecewise_linear(const struct pflex_curve *curve);

/* Throughput at aggregate power p (clamped to [P_min, P_max]). */
double pflex_curve_eval(const struct pflex_curve *curve, double power_w);

/* pflex_curve_eval at n powers in non-decreasing order, into ret_t[0..n):
 * the same values bit for bit, for less (the interval search walks on from
 * one power to the next). */
void pflex_curve_eval_sorted(const struct pflex_curve *curve, const double *power_w, size_t n,
                             double *ret_t);

/* Samples k >= 2 points (power, throughput) of the curve from lo to hi (both
 * clamped to [P_min, P_max], both included), increasing in power. Parametric
 * curves are sampled uniformly in SM clock, which needs no root finding per
 * point; the others uniformly in power. -EINVAL when k < 2 or lo > hi. */
int pflex_curve_sample(const struct pflex_curve *curve, double lo, double hi, size_t k,
                       double *ret_p, double *ret_t);

/* dT/dP at p; 0 above P_max and below P_min. At a knot the right derivative. */
double pflex_curve_deriv(const struct pflex_curve *curve, double power_w);

/* The least power in [P_min, P_max] that gives throughput >= tput: P_min when
 * tput <= T(P_min); -ERANGE when tput > T_max. */
int pflex_curve_inverse(const struct pflex_curve *curve, double tput, double *ret_power_w);

/* The params of a parametric curve; -EINVAL for other kinds. */
int pflex_curve_get_params(const struct pflex_curve *curve, struct pflex_curve_params *ret);

/* Measured points after repair (sorted by power, monotone); NULL/0 for other kinds. */
const struct pflex_curve_point *pflex_curve_points(const struct pflex_curve *curve, size_t *ret_n);

/* Per-GPU cap that yields aggregate power p for a job of `gpus` GPUs whose
 * caps may be set in [cap_min, cap_max]. A measured curve whose points carry
 * caps interpolates cap linearly against measured power between its points
 * (cap_max at P_max, because the top point is the uncapped run); otherwise the
 * cap is p / gpus, on the grounds that a binding cap is what a GPU draws, and
 * cap_max at P_max. The result is clamped to [cap_min, cap_max]. */
double pflex_curve_cap_for_power(const struct pflex_curve *curve, double power_w, int gpus,
                                 double cap_min, double cap_max);

/* Eq. 1 PFI of the curve on a grid of aggregate powers: the mean of
 * (1 - p/P_max) / (1 - T(p)/T_max) over grid points below P_max whose
 * throughput is below T_max. -PFLEX_E_NOPOINTS when no grid point qualifies. */
int pflex_curve_pfi(const struct pflex_curve *curve, const double *grid_w, size_t n,
                    double *ret_pfi);

/* Fits c and knee (idle_frac and vratio taken from *params) to measured points
 * by nonlinear least squares on relative throughput, with P_max and T_max from
 * the highest-power point and P_min from the lowest. On success *params holds
 * the fit and *ret_curve (if not NULL) the fitted curve; ret_rmse (if not NULL)
 * the RMS residual of T/T_max. -PFLEX_E_NOPOINTS with fewer than 3 points. */
int pflex_curve_fit(const struct pflex_curve_point *points, size_t n,
                    struct pflex_curve_params *params, double *ret_rmse,
                    struct pflex_curve **ret_curve);

/* The member of the family whose Eq. 1 PFI on grid_w equals pfi, found by
 * root finding along a one-parameter path: knee and vratio fixed at
 * params->knee and params->vratio, c in (0, 1]; a PFI too low even for c = 1
 * (a fully compute-bound job) lowers vratio towards 1 instead (c = 1), down to
 * PFI = 1 - idle_frac, the least the family reaches. idle_frac comes from
 * *params. -ERANGE when pfi is outside what the family reaches on this grid. */
int pflex_curve_from_pfi(double pfi, double p_min, double p_max, double t_max, const double *grid_w,
                         size_t n, const struct pflex_curve_params *params,
                         struct pflex_curve **ret_curve);

/* A curve with a given Eq. 1 PFI whose shape is learned from other jobs'
 * curves (templates), not from the family: each template j, read in relative
 * units (power / its P_max, throughput / its T_max; linearly extrapolated
 * below its P_min), has a throughput deficit d_j(p) = 1 - T_j/T_max_j and a
 * PFI pi_j on this job's grid (in relative power). The deficits are averaged
 * with Gaussian weights exp(-(pi_j - pfi)^2 / (2 bandwidth^2)) and the average
 * is scaled by the one factor that gives it Eq. 1 PFI pfi on grid_w: the
 * per-cap PFI_i profile along the curve is then that of the templates of
 * similar PFI (paper.md section 8: PFI_i is not constant along a curve). The
 * result is a measured (Steffen) curve through PFLEX_CURVE_TEMPLATE_POINTS
 * points uniform in power from p_min to p_max plus the grid points between
 * them, with throughput t_max at p_max; it reproduces pfi to rounding unless
 * its throughput had to be floored at 1e-3 t_max.
 * -EINVAL on bad input (pfi <= 0, no template), -PFLEX_E_NOPOINTS when no grid
 * point lies below p_max, -ERANGE when no template falls below T_max on the
 * grid. */
#define PFLEX_CURVE_TEMPLATE_POINTS 17
int pflex_curve_from_pfi_templates(double pfi, double p_min, double p_max, double t_max,
                                   const double *grid_w, size_t n,
                                   const struct pflex_curve *const *templates, size_t ntemplates,
                                   double bandwidth, struct pflex_curve **ret_curve);

/* The templates of pflex_curve_from_pfi_templates read once on one job's
 * knots and grid (p_min, p_max, t_max and grid_w as there): each template's
 * deficit at every knot and grid point and its PFI on the grid. A curve
 * from it (pflex_curve_from_templates) then costs one weighted sum, so that
 * one job's curves at many PFIs (a closed loop's candidates) or with
 * different subsets of the templates (a study's prediction sets) read each
 * template once; the result is bit for bit pflex_curve_from_pfi_templates
 * on the templates used, in their order. Keeps no pointer to the templates.
 * -EINVAL, -PFLEX_E_NOPOINTS and -ENOMEM as pflex_curve_from_pfi_templates. */
struct pflex_curve_templates;
int pflex_curve_templates_new(double p_min, double p_max, double t_max, const double *grid_w,
                              size_t n, const struct pflex_curve *const *templates,
                              size_t ntemplates, struct pflex_curve_templates **ret);
void pflex_curve_templates_free(struct pflex_curve_templates *t); /* accepts NULL */
size_t pflex_curve_templates_count(const struct pflex_curve_templates *t);
/* Whether t was built for these arguments (the same values, bit for bit). */
bool pflex_curve_templates_match(const struct pflex_curve_templates *t, double p_min, double p_max,
                                 double t_max, const double *grid_w, size_t n);
/* The curve with Eq. 1 PFI pfi shaped by t's templates j with use[j] != 0
 * (use NULL: all of them). -EINVAL on bad input, -ERANGE when no template
 * used falls below T_max on the grid, -ENOMEM. */
int pflex_curve_from_templates(const struct pflex_curve_templates *t, double pfi,
                               const unsigned char *use, double bandwidth,
                               struct pflex_curve **ret_curve);

/* Relative throughput T/T_max of the family at relative power P/P_max (clamped
 * to [0, 1]); no allocation, for fitting loops. */
double pflex_curve_family_tput(const struct pflex_curve_params *params, double p_rel);

/* Relative power P/P_max of the family at SM clock fraction x in [0, 1], and
 * its inverse: the clock at relative power p_rel. */
double pflex_curve_family_power(const struct pflex_curve_params *params, double x);
double pflex_curve_family_clock(const struct pflex_curve_params *params, double p_rel);

/* Default params for a GPU type and job: idle_frac = gpus * idle_w / p_max
 * (idle_w from the GPU table; gpu NULL: the H200's; a type the table does not
 * know: pflex_gpu_idle_share()), at most 0.9; knee and vratio the defaults,
 * c = 1. */
void pflex_curve_params_default(const char *gpu, int gpus, double p_max,
                                struct pflex_curve_params *ret);

#endif
