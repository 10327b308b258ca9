#!/usr/bin/env bash
# End-to-end test of `pflex fit`, `pflex predict` and `pflex ablation` on a
# small runs file written here: 8 headline groups of 3 runs (caps 300/500/700 W)
# whose PFI is known by construction, plus one validation group.
set -euo pipefail
: "${PFLEX:?PFLEX must name the pflex program}"
command -v jq >/dev/null || { echo "jq is needed (scripts/install-deps.sh)"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "FAIL: $*" >&2; exit 1; }

# Each group: power 620 W x GPUs uncapped, 78% and 52% of it at 500 and 300 W;
# throughput T = T_max (1 - (1 - P/P_max) / PFI), so that Eq. 1 gives the
# design PFI at both caps (up to the rounding of the numbers below):
# d-pt-a 1.15, d-pt-b 1.25, d-ft-a 1.30, d-ft-b 1.45, m-pt-a 1.40, m-pt-b 1.60,
# m-ft-a 2.00, m-ft-b 2.40. v-1: (1 - 3000/4800) / (1 - 6000/7000) = 2.625.
cat > runs.csv <<'CSV'
group,gpu,gpus,cap_w,power_w,tokens_per_s,arch,task,set,dram_active,mem_copy_util,pipe_tensor_active,sm_active,provenance
d-pt-a,H200,8,700,4960.0,4000.00,dense,pt,headline,0.300,22,0.620,0.910,synthetic
d-pt-a,H200,8,500,3868.8,3234.78,dense,pt,headline,0.234,17.2,0.620,0.910,synthetic
d-pt-a,H200,8,300,2579.2,2330.43,dense,pt,headline,0.156,11.4,0.620,0.910,synthetic
d-pt-b,H200,16,700,9920.0,8000.00,dense,pt,headline,0.340,25,0.550,0.880,synthetic
d-pt-b,H200,16,500,7737.6,6592.00,dense,pt,headline,0.265,19.5,0.550,0.880,synthetic
d-pt-b,H200,16,300,5158.4,4928.00,dense,pt,headline,0.177,13.0,0.550,0.880,synthetic
d-ft-a,H200,8,700,4960.0,4000.00,dense,ft,headline,0.380,27,0.500,0.860,synthetic
d-ft-a,H200,8,500,3868.8,3323.08,dense,ft,headline,0.296,21.1,0.500,0.860,synthetic
d-ft-a,H200,8,300,2579.2,2523.08,dense,ft,headline,0.198,14.0,0.500,0.860,synthetic
d-ft-b,H200,16,700,9920.0,8000.00,dense,ft,headline,0.360,31,0.470,0.840,synthetic
d-ft-b,H200,16,500,7737.6,6786.21,dense,ft,headline,0.281,24.2,0.470,0.840,synthetic
d-ft-b,H200,16,300,5158.4,5351.72,dense,ft,headline,0.187,16.1,0.470,0.840,synthetic
m-pt-a,H200,8,700,4960.0,8000.00,moe,pt,headline,0.450,33,0.400,0.800,synthetic
m-pt-a,H200,8,500,3868.8,6742.86,moe,pt,headline,0.351,25.7,0.400,0.800,synthetic
m-pt-a,H200,8,300,2579.2,5257.14,moe,pt,headline,0.234,17.2,0.400,0.800,synthetic
m-pt-b,H200,8,700,4960.0,8000.00,moe,pt,headline,0.430,38,0.360,0.780,synthetic
m-pt-b,H200,8,500,3868.8,6900.00,moe,pt,headline,0.335,29.6,0.360,0.780,synthetic
m-pt-b,H200,8,300,2579.2,5600.00,moe,pt,headline,0.224,19.8,0.360,0.780,synthetic
m-ft-a,H200,8,700,4960.0,8000.00,moe,ft,headline,0.520,42,0.300,0.740,synthetic
m-ft-a,H200,8,500,3868.8,7120.00,moe,ft,headline,0.406,32.8,0.300,0.740,synthetic
m-ft-a,H200,8,300,2579.2,6080.00,moe,ft,headline,0.270,21.8,0.300,0.740,synthetic
m-ft-b,H200,16,700,9920.0,16000.00,moe,ft,headline,0.550,47,0.260,0.700,synthetic
m-ft-b,H200,16,500,7737.6,14533.33,moe,ft,headline,0.429,36.7,0.260,0.700,synthetic
m-ft-b,H200,16,300,5158.4,12800.00,moe,ft,headline,0.286,24.4,0.260,0.700,synthetic
v-1,H200,8,700,4800,7000,moe,pt,validation,0.40,30,0.45,0.8,synthetic
v-1,H200,8,400,3000,6000,moe,pt,validation,0.30,25,0.40,0.7,synthetic
CSV

close() { # close A B TOL: |A - B| <= TOL
  awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'
}

# --- fit -------------------------------------------------------------------
"$PFLEX" fit runs.csv --set headline --features dram_copy --out m.json > fit.txt
grep >/dev/null "fitted on 8 groups" fit.txt || fail "fit summary: $(cat fit.txt)"
jq -e '.format == 1 and .kind == "ols" and .features == ["dram_copy"]
       and (.coefficients | length) == 1 and (.intercept | type) == "number"
       and .lambda == null and .training.n == 8 and .training.set == "headline"
       and .training.file == "runs.csv" and (.training.groups | length) == 8
       and (.cv.loo.r2 | type) == "number" and (.cv.loo.rmse | type) == "number"
       and (.cv.loo.rho | type) == "number" and .cv.loco.clusters == "arch-task"
       and (.cv.loco.r2 | type) == "number" and (.training.r2_in | type) == "number"
       and (.prior.cells | length) == 4 and (.pflex_version | type) == "string"
       and .target.quantity == "pfi" and .target.definition == "ratio"
       and .target.exclude == "noise" and .target.grid == null' m.json \
  >/dev/null || fail "model file fields"
# Targets: the design PFI of every group.
for g in d-pt-a:1.15 d-pt-b:1.25 d-ft-a:1.30 d-ft-b:1.45 m-pt-a:1.40 m-pt-b:1.60 m-ft-a:2.00 m-ft-b:2.40; do
  v=$(jq -r --arg g "${g%%:*}" '.training.groups[] | select(.group == $g) | .pfi' m.json)
  close "$v" "${g##*:}" 0.005 || fail "PFI of ${g%%:*}: $v, want ${g##*:}"
done
# The prior's moe-ft cell: (2.00 + 2.40) / 2.
v=$(jq -r '.prior.cells[] | select(.arch == "moe" and .task == "ft") | .mean' m.json)
close "$v" 2.2 0.005 || fail "prior moe-ft $v"

# --- predict reproduces the in-sample predictions ----------------------------
"$PFLEX" predict --model m.json runs.csv --json > pred.json
jq -e '(.predictions | length) == 9 and .kind == "ols" and .scores.n == 9' pred.json >/dev/null \
  || fail "predict JSON fields"
jq -e --slurpfile m m.json '
  [ .predictions[] | select(.group != "v-1") ] as $p
  | [ $m[0].training.groups[] ] as $f
  | all(range(0; 8); ($p[.].group == $f[.].group)
        and (($p[.].predicted - $f[.].fitted) | fabs) < 1e-9
        and (($p[.].measured - $f[.].pfi) | fabs) < 1e-9
        and $p[.].prediction == "model")' pred.json >/dev/null \
  || fail "predict does not reproduce fit's in-sample predictions"
v=$(jq -r '.predictions[] | select(.group == "v-1") | .measured' pred.json)
close "$v" 2.625 1e-9 || fail "measured PFI of v-1: $v"
"$PFLEX" predict --model m.json runs.csv --csv | head -1 | grep >/dev/null '^group,arch,task,runs,predicted,prediction,measured,provenance$' \
  || fail "predict --csv header"

# --- predict on live telemetry (one run per job, no PFI) ----------------------
cat > live.csv <<'CSV'
group,gpu,gpus,cap_w,power_w,tokens_per_s,arch,task,dram_active,mem_copy_util
job-1,H200,8,700,5000,9000,moe,ft,0.5,40
job-2,H200,8,700,5000,9000,dense,pt,0.25,20
CSV
"$PFLEX" predict --model m.json live.csv --json > live.json
b0=$(jq -r '.intercept' m.json); b1=$(jq -r '.coefficients[0]' m.json)
want=$(awk -v a="$b0" -v b="$b1" 'BEGIN { printf "%.12f", a + b * 0.5 * 0.40 }')
v=$(jq -r '.predictions[0].predicted' live.json)
close "$v" "$want" 1e-9 || fail "live prediction $v, want $want"
jq -e '.predictions[0].measured == null and .scores.n == 0' live.json >/dev/null || fail "live: measured"

# --- a missing feature: an error naming group and feature, or the prior -------
cat > nofeat.csv <<'CSV'
group,gpu,gpus,cap_w,power_w,tokens_per_s,arch,task,dram_active
job-x,H200,8,700,5000,9000,moe,ft,0.5
CSV
if "$PFLEX" predict --model m.json nofeat.csv > out.txt 2> err.txt; then fail "missing feature accepted"; fi
grep >/dev/null "group 'job-x'" err.txt && grep >/dev/null "feature 'dram_copy'" err.txt && grep >/dev/null "mem_copy_util" err.txt \
  || fail "missing-feature message: $(cat err.txt)"
"$PFLEX" predict --model m.json nofeat.csv --prior-fallback --json > prior.json 2> err.txt
jq -e '.predictions[0].prediction == "prior"' prior.json >/dev/null || fail "prior fallback not marked"
v=$(jq -r '.predictions[0].predicted' prior.json)
close "$v" 2.2 0.005 || fail "prior fallback value $v"

# The target rule travels with the model.
"$PFLEX" fit runs.csv --set headline --exclude paper --grid 300,700 --out mp.json > /dev/null
jq -e '.target.exclude == "paper" and .target.grid == [300, 700]' mp.json >/dev/null || fail "target options"
"$PFLEX" predict --model mp.json runs.csv | grep >/dev/null "the paper's rule), on the caps 300,700" || fail "predict target line"
# On the 300 W cap alone, v-1 (caps 400 and 700) has no PFI.
"$PFLEX" predict --model mp.json runs.csv --json | jq -e '(.predictions[] | select(.group == "v-1") | .measured) == null' \
  >/dev/null || fail "predict measured PFI under the model's grid"
set +e
"$PFLEX" fit runs.csv --draws 10 2>/dev/null; [ $? -eq 2 ] || fail "--draws accepted"
set -e

# --- ridge and prior models ---------------------------------------------------
"$PFLEX" fit runs.csv --set headline --features dram_copy,meta --model ridge --json > r.json
jq -e '.kind == "ridge" and .lambda_selection == "nested-loo" and .lambda >= 0.001 and .lambda <= 10000
       and (.standardization.sd | length) == 4 and .features == ["dram_copy","arch_moe","task_ft","log_gpus"]' \
  r.json >/dev/null || fail "ridge model fields"
"$PFLEX" fit runs.csv --set headline --model ridge --lambda 0.5 --json | jq -e '.lambda == 0.5 and .lambda_selection == "fixed"' >/dev/null \
  || fail "ridge fixed lambda"
"$PFLEX" fit runs.csv --set headline --model prior --out p.json > /dev/null
"$PFLEX" predict --model p.json runs.csv --json | jq -e '
  (.predictions[] | select(.group == "m-ft-a") | .predicted - 2.2 | fabs) < 0.005
  and all(.predictions[]; .prediction == "prior")' >/dev/null || fail "prior model predictions"

# --- ablation ----------------------------------------------------------------
"$PFLEX" ablation runs.csv --set headline --json > abl.json
jq -e '(.rows | length) == 8 and .n == 8 and .loco_clusters == "arch-task"
       and [.rows[].p] == [1, 1, 2, 3, 4, 4, 7, 0]
       and .dcgm_columns == ["dram_active", "mem_copy_util", "pipe_tensor_active", "sm_active"]
       and all(.rows[0:7][]; (.ols.loo.r2 | type) == "number" and (.ridge.loco.rmse | type) == "number")
       and (.clusters | map(.n) | add) == 8' abl.json >/dev/null || fail "ablation JSON"
jq -e --slurpfile m m.json '
  ((.rows[0].ols.r2_in - $m[0].training.r2_in) | fabs) < 1e-12
  and ((.rows[0].ols.loo.r2 - $m[0].cv.loo.r2) | fabs) < 1e-12
  and ((.rows[0].ols.loco.rho - $m[0].cv.loco.rho) | fabs) < 1e-12' abl.json >/dev/null \
  || fail "ablation row (i) differs from pflex fit"
"$PFLEX" ablation runs.csv --set headline --loco pooled-dense --json \
  | jq -e '.clusters == [{"name": "dense", "n": 4}, {"name": "moe-pt", "n": 2}, {"name": "moe-ft", "n": 2}]' \
  >/dev/null || fail "pooled-dense clusters"
"$PFLEX" ablation runs.csv --set headline --paper --json \
  | jq -e '.rows[0].paper.loo.r2 == 0.524 and .rows[6].paper.p == 16 and (.rows[7] | has("paper") | not)' \
  >/dev/null || fail "ablation --paper"
"$PFLEX" ablation runs.csv --set headline > abl.txt
grep >/dev/null "(vii) all DCGM + metadata" abl.txt || fail "ablation table"
"$PFLEX" ablation runs.csv --set headline --csv | head -1 | grep >/dev/null '^id,label,p,r2_in,loo_r2' || fail "ablation csv"

# --- usage errors ------------------------------------------------------------
set +e
"$PFLEX" fit runs.csv --model lasso 2>/dev/null; [ $? -eq 2 ] || fail "unknown model: exit status"
"$PFLEX" predict runs.csv 2>/dev/null; [ $? -eq 2 ] || fail "predict without --model: exit status"
"$PFLEX" fit runs.csv --set nosuch 2>/dev/null; [ $? -eq 1 ] || fail "empty set: exit status"
"$PFLEX" fit runs.csv --features nosuch 2> err.txt; [ $? -eq 1 ] || fail "unknown feature: exit status"
set -e
grep >/dev/null "feature 'nosuch'" err.txt || fail "unknown feature message: $(cat err.txt)"
"$PFLEX" help ablation | grep >/dev/null -- "--loco" || fail "help ablation"
echo "predict_cli: ok"
