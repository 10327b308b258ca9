#!/usr/bin/env bash
# `pflex aggregate` end to end: a synthetic 4-GPU series written here with awk,
# with a warmup, a startup, an eval dip and a checkpoint dip inside training
# and a teardown; the expected top-10% means are worked out below by hand.
set -euo pipefail
: "${PFLEX:?PFLEX must name the pflex program}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 4 GPUs, a sample every 5 s. Steps 0-9 warmup (fb 3000 MiB), 10-19 startup
# (util 0), 20-119 training (j = step - 20): per-GPU power 400 + 5 g + 3 (j mod 10),
# eval at j = 30..39 (util 40, 250 W), checkpoint at j = 70..75 (util 0, 120 W);
# 120-124 teardown. Throughput rows every 10 s in training: 20000 + 10 i, plus an
# outlier of 50000 during warmup that must not count.
awk 'BEGIN {
  OFS = ","
  print "time_s,gpu,power_w,gpu_util,fb_used_mib,sm_active,tokens_per_s"
  for (s = 0; s < 125; s++) {
    for (g = 0; g < 4; g++) {
      t = s * 5 + g * 0.002
      if (s < 10)       { p = 70;  u = 0;  fb = 3000;  sm = 0 }
      else if (s < 20)  { p = 95;  u = 0;  fb = 40000; sm = 0 }
      else if (s < 120) {
        j = s - 20; fb = 80000; sm = 0.5 + 0.01 * g
        if (j >= 30 && j <= 39)      { p = 250; u = 40 }
        else if (j >= 70 && j <= 75) { p = 120; u = 0 }
        else                         { p = 400 + 5 * g + 3 * (j % 10); u = 90 }
      } else            { p = 90;  u = 0;  fb = 80000; sm = 0 }
      print t, g, p, u, fb, sm, ""
    }
  }
  print 20, "", "", "", "", "", 50000
  for (i = 0; i < 50; i++) print 100 + 10 * i, "", "", "", "", "", 20000 + 10 * i
}' > "$tmp/series.csv"

"$PFLEX" aggregate "$tmp/series.csv" --group g1 --gpu-type H200 --cap 700 --csv \
  > "$tmp/row.csv" 2> "$tmp/err.txt" || { cat "$tmp/err.txt"; fail "aggregate failed"; }

# Value of column $2 in the one data row of CSV file $1.
col() { awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i }
                              NR == 2 { if (c) print $c }' "$1"; }
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-6 * (b < 0 ? -b : b) + 1e-9) }'; }

# Power: per step the 4-GPU sum outside the dips is 1600 + 5*(0+1+2+3) + 12 (j mod 10)
# = 1630 + 12 r. 100 training steps -> top 10 steps. r = 9 at j = 9, 19, ..., 99 but
# j = 39 is in the eval: 9 steps of 1738 W; next r = 8 (1726 W, j = 78 is outside
# the checkpoint). Mean (9 * 1738 + 1726) / 10 = 1736.8 W.
near "$(col "$tmp/row.csv" power_w)" 1736.8 || fail "power_w $(col "$tmp/row.csv" power_w) != 1736.8"
# Throughput: 50 samples 20000..20490 in the window; top 5: 20450..20490, mean 20470.
near "$(col "$tmp/row.csv" tokens_per_s)" 20470 || fail "tokens_per_s != 20470"
# sm_active 0.5 + 0.01 g per GPU in training: mean over GPUs 0.515. gpu_util top: 90.
near "$(col "$tmp/row.csv" sm_active)" 0.515 || fail "sm_active != 0.515"
near "$(col "$tmp/row.csv" gpu_util)" 90 || fail "gpu_util != 90"
[ "$(col "$tmp/row.csv" gpus)" = 4 ] || fail "gpus != 4"
[ "$(col "$tmp/row.csv" group)" = g1 ] || fail "group != g1"
[ "$(col "$tmp/row.csv" gpu)" = H200 ] || fail "gpu != H200"
near "$(col "$tmp/row.csv" cap_w)" 700 || fail "cap_w != 700"
# power_sd is the standard error of the top-10% mean: values 9 x 1738 and 1726,
# mean 1736.8, deviations 1.2 (9x) and -10.8: SS = 9*1.44 + 116.64 = 129.6,
# SD^2 = 129.6 / 9 = 14.4. As an upper-tail mean its SE also carries the threshold
# q = 1726 (p = 10/100): SE = sqrt((14.4 + 0.9 * 10.8^2) / 10) = sqrt(11.9376) = 3.455083
near "$(col "$tmp/row.csv" power_sd)" 3.455083 || fail "power_sd $(col "$tmp/row.csv" power_sd) != 3.455083"
# Phases on stderr: 10 warmup steps (40 samples), 10 startup, 100 training, 5 other.
grep -q "warmup 40/10, startup 40/10, training 400/100, other 20/5; 4 GPUs" "$tmp/err.txt" \
  || { cat "$tmp/err.txt"; fail "phase counts"; }

# --out writes the same runs CSV, which the runs reader accepts.
"$PFLEX" aggregate "$tmp/series.csv" --group g1 --gpu-type H200 --cap 700 --out "$tmp/runs.csv" 2>/dev/null
cmp -s "$tmp/runs.csv" "$tmp/row.csv" || fail "--out differs from --csv"

# --append builds a sweep group's runs file cap by cap (the group may lack its
# uncapped run until the last one); a cap twice or a different GPU count is refused.
rm -f "$tmp/sweep.csv"
"$PFLEX" aggregate "$tmp/series.csv" --group g1 --gpu-type H200 --cap 500 --out "$tmp/sweep.csv" --append 2>/dev/null
"$PFLEX" aggregate "$tmp/series.csv" --group g1 --gpu-type H200 --cap 700 --out "$tmp/sweep.csv" --append 2>"$tmp/e3"
grep -q "wrote group 'g1' at cap 700 W to '$tmp/sweep.csv' (2 runs in the file)" "$tmp/e3" ||
  fail "--out not announced: $(cat "$tmp/e3")"
[ "$(wc -l < "$tmp/sweep.csv")" = 3 ] || fail "--append: $(wc -l < "$tmp/sweep.csv") lines"
awk -F, 'NR > 1 { print $4 }' "$tmp/sweep.csv" | tr '\n' ' ' | grep "^500 700 $" > /dev/null || fail "--append caps"
set +e
"$PFLEX" aggregate "$tmp/series.csv" --group g1 --gpu-type H200 --cap 700 --out "$tmp/sweep.csv" --append 2> "$tmp/e4"; rc=$?
"$PFLEX" aggregate "$tmp/series.csv" --group g1 --gpu-type H100 --cap 600 --out "$tmp/sweep.csv" --append 2> "$tmp/e5"; rc5=$?
set -e
[ $rc = 1 ] && grep -q "already has a run of group 'g1' at cap 700 W" "$tmp/e4" || { cat "$tmp/e4"; fail "duplicate cap"; }
[ $rc5 = 1 ] && grep -q "runs on 4 x H200" "$tmp/e5" || { cat "$tmp/e5"; fail "mixed GPU type"; }
[ "$(wc -l < "$tmp/sweep.csv")" = 3 ] || fail "a refused --append changed the file"

# --json carries the same numbers.
"$PFLEX" aggregate "$tmp/series.csv" --cap 700 --json > "$tmp/run.json" 2>/dev/null
grep -q '"group": "series"' "$tmp/run.json" || fail "default group from the file name"
grep -q '"gpus": 4' "$tmp/run.json" || fail "json gpus"
grep -Eq '"power_w": 1736\.8(0*[0-9]?)?,' "$tmp/run.json" || fail "json power_w"

# The human table names the metrics.
"$PFLEX" aggregate "$tmp/series.csv" --cap 700 > "$tmp/table.txt" 2>/dev/null
grep -q "^power_w .*sum" "$tmp/table.txt" || fail "table"

# --top 1 averages all 100 training steps: non-dip sums 1630 + 12 r over 84 steps
# (r = 0..9 ten times each, minus eval r = 0..9 once and checkpoint r = 0..5):
# 84 * 1630 + 12 * (450 - 45 - 15) = 136920 + 4680 = 141600; eval 10 * 1000,
# checkpoint 6 * 480 = 2880. Mean (141600 + 10000 + 2880) / 100 = 1544.8.
"$PFLEX" aggregate "$tmp/series.csv" --cap 700 --top 1 --csv > "$tmp/all.csv" 2>/dev/null
near "$(col "$tmp/all.csv" power_w)" 1544.8 || fail "--top 1 power_w $(col "$tmp/all.csv" power_w)"

# Throughput from a separate file as a time per step (--tput, --unit step-time):
# s_per_step 0.5 + 0.001 i at t = 100 + 10 i. The top 10% of the rates are the 5
# fastest steps (i = 0..4); the row gets the inverse of their mean rate.
awk -F, 'BEGIN { OFS = "," } $2 != "" || NR == 1 { NF = 6; print }' "$tmp/series.csv" > "$tmp/gpus.csv"
awk -v OFS=, 'BEGIN { print "time_s,s_per_step"
                     for (i = 0; i < 50; i++) print 100 + 10 * i, 0.5 + 0.001 * i }' > "$tmp/steps.csv"
expect=$(awk 'BEGIN { for (i = 0; i < 5; i++) s += 1 / (0.5 + 0.001 * i); printf "%.12g", 5 / s }')
"$PFLEX" aggregate "$tmp/gpus.csv" --cap 700 --tput "$tmp/steps.csv" --unit step-time --csv \
  > "$tmp/steps_row.csv" 2> "$tmp/e0" || { cat "$tmp/e0"; fail "--tput step-time"; }
near "$(col "$tmp/steps_row.csv" s_per_step)" "$expect" \
  || fail "s_per_step $(col "$tmp/steps_row.csv" s_per_step) != $expect"
near "$(col "$tmp/steps_row.csv" power_w)" 1736.8 || fail "power_w with --tput"
grep -q "only ratios" "$tmp/e0" || fail "relative-unit note"

# Errors: no training phase (exit 1), a bad cell (exit 1, names line and column),
# a missing cap (exit 2), no argument (exit 2).
awk -F, 'BEGIN { OFS = "," } NR == 1 || $2 == "" { print; next } { $4 = 0; print }' \
  "$tmp/series.csv" > "$tmp/idle.csv"
set +e
"$PFLEX" aggregate "$tmp/idle.csv" --cap 700 > /dev/null 2> "$tmp/e1"; rc=$?
set -e
[ $rc = 1 ] || fail "idle series: exit $rc"
grep -q "no training phase" "$tmp/e1" || { cat "$tmp/e1"; fail "idle message"; }

sed '6s/^5,0,70,/5,0,abc,/' "$tmp/series.csv" > "$tmp/bad.csv"
sed -n 6p "$tmp/bad.csv" | grep abc > /dev/null || fail "test setup: bad cell not written"
set +e
"$PFLEX" aggregate "$tmp/bad.csv" --cap 700 > /dev/null 2> "$tmp/e2"; rc=$?
set -e
[ $rc = 1 ] || fail "bad cell: exit $rc"
grep -q "line 6, column 'power_w'" "$tmp/e2" || { cat "$tmp/e2"; fail "bad cell message"; }

set +e
"$PFLEX" aggregate "$tmp/series.csv" > /dev/null 2> "$tmp/e3"; rc=$?
"$PFLEX" aggregate > /dev/null 2>&1; rc2=$?
set -e
[ $rc = 2 ] || fail "missing --cap: exit $rc"
[ $rc2 = 2 ] || fail "no argument: exit $rc2"
echo "aggregate_cli: ok"
