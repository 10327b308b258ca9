/* The feedback term on the measured cluster total (feedback.h). */
#include "controller/feedback.h"

#include <math.h>

void ctl_feedback_opts_default(struct ctl_feedback_opts *opts) {
  opts->gain_up = 0.14;
  opts->gain_down = 0.5;
  opts->margin = 0.005;
  opts->max_over = 0.01;
  opts->max_under = 0.3;
}

#define LAG_ROUNDS 2

void ctl_feedback_init(struct ctl_feedback *fb, const struct ctl_feedback_opts *opts) {
  fb->opts = *opts;
  ctl_feedback_reset(fb);
}

void ctl_feedback_reset(struct ctl_feedback *fb) {
  fb->offset_w = 0;
  fb->started = false;
  fb->lag_rounds = 0;
  fb->reserve_w = 0;
  fb->reserve_known = false;
}

void ctl_feedback_start(struct ctl_feedback *fb, double target_w) {
  if (fb->started) return;
  fb->offset_w = fb->opts.max_over * target_w;
  fb->started = true;
  fb->reserve_w = 0;
  fb->reserve_known = true;
}

void ctl_feedback_resume(struct ctl_feedback *fb, double offset_w) {
  fb->offset_w = offset_w;
  fb->started = true;
  fb->reserve_known = false; /* the stored offset has the reserve it had in it */
}

/* The offset within [-max_under, max_over] of the target. */
static void clamp_offset(struct ctl_feedback *fb, double target_w) {
  double lo = -fb->opts.max_under * target_w, hi = fb->opts.max_over * target_w;
  fb->offset_w = fb->offset_w < lo ? lo : fb->offset_w > hi ? hi : fb->offset_w;
}

void ctl_feedback_reserve(struct ctl_feedback *fb, double target_w, double rise_w) {
  double reserve = isfinite(rise_w) ? fmax(0.0, rise_w - fb->opts.max_over * target_w) : 0.0;
  if (fb->reserve_known) {
    fb->offset_w -= reserve - fb->reserve_w;
    clamp_offset(fb, target_w);
  }
  fb->reserve_w = reserve;
  fb->reserve_known = true;
}

double ctl_feedback_step(struct ctl_feedback *fb, double target_w, double measured_w, double caps_w,
                         enum ctl_feedback_limit limit) {
  const struct ctl_feedback_opts *o = &fb->opts;
  bool lag = isfinite(measured_w) && measured_w > caps_w; /* the reading predates the caps */
  fb->lag_rounds = lag ? fb->lag_rounds + 1 : 0;
  if (lag && fb->lag_rounds <= LAG_ROUNDS) return ctl_feedback_budget(fb, target_w);
  if (isfinite(measured_w) && target_w > 0) {
    if (lag) measured_w = caps_w; /* above the caps this long: counted at them */
    double err = target_w * (1.0 - o->margin) - fb->reserve_w - measured_w;
    /* Over the target less the reserve is over what a dead controller's
     * caps may safely leave: come down as fast as from over the target. */
    double gain = measured_w > target_w - fb->reserve_w ? o->gain_down : o->gain_up;
    double step = gain * err;
    bool pinned = (limit == CTL_FB_AT_TOP && step > 0) || (limit == CTL_FB_AT_BOTTOM && step < 0);
    if (!pinned) fb->offset_w += step;
    clamp_offset(fb, target_w);
  }
  return ctl_feedback_budget(fb, target_w);
}

double ctl_feedback_budget(const struct ctl_feedback *fb, double target_w) {
  return target_w + fb->offset_w;
}
