#!/usr/bin/env bash
# Integration test of `pflex pfi`: values, exclusions, grid, definitions, the
# JSON/CSV fields and exit statuses, on small runs CSVs written here. Expected
# values are worked out by hand in tests/unit/test_pfi.c (same curves):
#   curveA (6 caps): ratio 1.893333, grid 200/500/600/700 1.911111, area 0.1386
#   curveB (4 caps, 600 W does not bind): noise rule 2.355263 on 3 runs, paper rule 4.377193
#   law (T = sqrt(P)/10): ratio 1.6, elasticity 0.5
# Uses only bash, grep, awk, tr (no python, no jq: a clean Debian 12 has neither).
set -euo pipefail
: "${PFLEX:?PFLEX must name the pflex program}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# has GREP-ARGS: grep that reads all its input. `... | grep -q` exits at the
# first match, the writer may then die of SIGPIPE, and pipefail turns a match
# into a failure (seen under load).
has() { grep "$@" > /dev/null; }
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }' ||
  fail "$4: got '$1', expected $2 +/- $3"; }
# jget JSON KEY [N]: the N-th (default 1st) value of "KEY" in compact JSON.
jget() { printf '%s' "$1" | tr -d ' \n' | grep -o "\"$2\":[^,}]*" | sed -n "${3:-1}p" | cut -d: -f2-; }
# cget CSV GROUP COLUMN: a field of the --csv output by column name.
cget() { printf '%s\n' "$1" | awk -F, -v g="$2" -v c="$3" '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next } $1 == g { print $(col[c]) }'; }

cat > "$tmp/runs.csv" <<'CSV'
group,gpu,gpus,cap_w,power_w,tokens_per_s,arch,task
curveA,H200,8,700,5000,1000,dense,pt
curveA,H200,8,200,1600,550,dense,pt
curveA,H200,8,300,2400,700,dense,pt
curveA,H200,8,500,4000,910,dense,pt
curveA,H200,8,400,3200,820,dense,pt
curveA,H200,8,600,4600,960,dense,pt
curveB,H200,16,200,3600,1200,moe,ft
curveB,H200,16,500,8000,1900,moe,ft
curveB,H200,16,600,9300,1995,moe,ft
curveB,H200,16,700,9500,2000,moe,ft
law,H200,4,400,400,2,dense,ft
law,H200,4,500,900,3,dense,ft
law,H200,4,600,1600,4,dense,ft
law,H200,4,700,2500,5,dense,ft
CSV

# Human table: values, runs used, and the note on the excluded run.
out=$("$PFLEX" pfi "$tmp/runs.csv" --draws 500)
echo "$out"
echo "$out" | has -E '^curveA +H200 +8 +6 +1\.893 ' || fail "curveA row"
echo "$out" | has -E '^curveB +H200 +16 +3 +2\.355 ' || fail "curveB row (600 W excluded)"
echo "$out" | has -E '^law +H200 +4 +4 +1\.600 ' || fail "law row"
echo "$out" | has 'curveB: 600 W excluded: cap does not bind: throughput 0.25% below' ||
  fail "note on the non-binding cap"

# CSV: full precision, the grid beside the full value, excluded runs.
csv=$("$PFLEX" pfi "$tmp/runs.csv" --grid 200,500,600,700 --csv --draws 0)
echo "$csv"
near "$(cget "$csv" curveA pfi)" 1.893333 1e-6 "curveA ratio"
near "$(cget "$csv" curveA grid_pfi)" 1.911111 1e-6 "curveA grid"
near "$(cget "$csv" curveB pfi)" 2.355263 1e-6 "curveB noise rule"
[ "$(cget "$csv" curveB runs)" = 3 ] || fail "curveB runs"
[ "$(cget "$csv" curveB excluded)" = "600:within-noise" ] || fail "curveB excluded"
near "$(cget "$csv" law pfi)" 1.6 1e-9 "law ratio"

# A range A:B:STEP is the list it spells out, ends included.
[ "$("$PFLEX" pfi "$tmp/runs.csv" --grid 200:600:100 --csv --draws 0)" = \
  "$("$PFLEX" pfi "$tmp/runs.csv" --grid 200,300,400,500,600 --csv --draws 0)" ] || fail "grid range"

# A grid cap that no run has is named, in the table notes and in JSON.
out=$("$PFLEX" pfi "$tmp/runs.csv" --grid 200,500,650 --draws 0)
echo "$out" | has 'curveA (grid): no run at 650 W' || fail "grid cap without a run"
printf '%s' "$("$PFLEX" pfi "$tmp/runs.csv" --grid 200,500,650 --draws 0 --json)" | tr -d ' \n' |
  has '"grid_missing":\[650.0\]' || fail "JSON grid_missing"

# The paper's rule keeps the non-binding cap: the noise drives the value up.
csv=$("$PFLEX" pfi "$tmp/runs.csv" --exclude paper --csv --draws 0)
near "$(cget "$csv" curveB pfi)" 4.377193 1e-6 "curveB paper rule"
[ "$(cget "$csv" curveB runs)" = 4 ] || fail "curveB runs, paper rule"
# With k = 0.3 the drop of 0.25% exceeds 0.3 x 0.705% = 0.21%: kept as well.
csv=$("$PFLEX" pfi "$tmp/runs.csv" --noise-k 0.3 --csv --draws 0)
near "$(cget "$csv" curveB pfi)" 4.377193 1e-6 "curveB k=0.3"

# The other definitions.
csv=$("$PFLEX" pfi "$tmp/runs.csv" --definition area --csv --draws 0)
near "$(cget "$csv" curveA pfi)" 0.1386 1e-9 "curveA area"
csv=$("$PFLEX" pfi "$tmp/runs.csv" --definition elasticity --csv --draws 0)
near "$(cget "$csv" law pfi)" 0.5 1e-9 "law elasticity"

# JSON: the required fields, the excluded list with reasons, the grid.
json=$("$PFLEX" pfi "$tmp/runs.csv" --json --grid 200,500,600,700 --draws 1000 --seed 3)
for key in group runs pfi ci_low ci_high excluded gpu gpus arch task definition grid grid_pfi; do
  printf '%s' "$json" | has "\"$key\":" || fail "JSON lacks '$key'"
done
compact=$(printf '%s' "$json" | tr -d ' \n')
echo "$compact" | has '"group":"curveB","gpu":"H200","gpus":16,"arch":"moe","task":"ft"' ||
  fail "JSON curveB identity"
echo "$compact" | has '"excluded":\[{"cap_w":600.0,"reason":"within-noise"' ||
  fail "JSON curveB excluded run"
echo "$compact" | has '"grid":\[200.0,500.0,600.0,700.0\]' || fail "JSON grid"
near "$(jget "$json" pfi 1)" 1.893333 1e-6 "JSON curveA pfi"
lo=$(jget "$json" ci_low 1) hi=$(jget "$json" ci_high 1)
awk -v l="$lo" -v h="$hi" 'BEGIN { exit !(l < 1.893333 && 1.893333 < h && h - l < 1) }' ||
  fail "curveA CI [$lo, $hi] should hold 1.893333"
# Same seed, same output; another seed, another CI.
[ "$("$PFLEX" pfi "$tmp/runs.csv" --json --grid 200,500,600,700 --draws 1000 --seed 3)" = "$json" ] ||
  fail "not reproducible"
[ "$(jget "$("$PFLEX" pfi "$tmp/runs.csv" --json --draws 1000 --seed 4)" ci_low 1)" != "$lo" ] ||
  fail "seed has no effect"

# Another throughput unit: the same ratios, the same PFI, and the note says so.
sed -e 's/tokens_per_s/samples_per_s/' "$tmp/runs.csv" > "$tmp/samples.csv"
csv=$("$PFLEX" pfi "$tmp/samples.csv" --unit samples --csv --draws 0 2> "$tmp/err")
near "$(cget "$csv" curveA pfi)" 1.893333 1e-6 "samples/s"
# A throughput column of any name, as pflex import takes it.
sed -e 's/tokens_per_s/my_rate/' "$tmp/runs.csv" > "$tmp/named.csv"
csv=$("$PFLEX" pfi "$tmp/named.csv" --tput-column my_rate --csv --draws 0)
near "$(cget "$csv" curveA pfi)" 1.893333 1e-6 "--tput-column"

# A group whose every cap is within noise: no number, the reasons, exit 1.
cat > "$tmp/flat.csv" <<'CSV'
group,gpu,gpus,cap_w,power_w,tokens_per_s
flat,H200,8,500,4000,998
flat,H200,8,600,4500,1001
flat,H200,8,700,5000,1000
CSV
set +e
out=$("$PFLEX" pfi "$tmp/flat.csv" --draws 100 2> "$tmp/err"); rc=$?
json=$("$PFLEX" pfi "$tmp/flat.csv" --json --draws 100 2> /dev/null)
set -e
echo "$out"; cat "$tmp/err"
[ $rc -eq 1 ] || fail "all-excluded group: exit $rc, expected 1"
grep -q "group 'flat': no PFI: every capped run was excluded" "$tmp/err" || fail "all-excluded error"
echo "$out" | has -E '^flat +H200 +8 +0 +- ' || fail "all-excluded row shows a number"
echo "$out" | has 'flat: 600 W excluded: cap does not bind: throughput 0.10% above' ||
  fail "all-excluded reasons"
compact=$(printf '%s' "$json" | tr -d ' \n')
echo "$compact" | has '"pfi":null' || fail "JSON pfi should be null"
[ "$(echo "$compact" | grep -o '"reason":"within-noise"' | wc -l)" -eq 2 ] || fail "JSON reasons"

# A capped run faster than the uncapped one beyond noise (+10%, SE 0.7%):
# excluded, with a hint that the uncapped run is the suspect.
printf 'group,gpu,gpus,cap_w,power_w,tokens_per_s\nfast,H200,8,200,1600,500\nfast,H200,8,500,4000,1100\nfast,H200,8,700,5000,1000\n' > "$tmp/fast.csv"
out=$("$PFLEX" pfi "$tmp/fast.csv" --draws 0)
echo "$out" | has 'fast: 500 W excluded: throughput 10.00% above the uncapped run.s, beyond noise' ||
  fail "faster-than-uncapped note: $out"

# A group with only its uncapped run: no number, and the reason in words
# (not a bare "Invalid argument"), on stderr and in JSON.
printf 'group,gpu,gpus,cap_w,power_w,tokens_per_s\nlone,H200,8,700,5000,1000\n' > "$tmp/lone.csv"
set +e
"$PFLEX" pfi "$tmp/lone.csv" --draws 0 > /dev/null 2> "$tmp/err"; rc=$?
json=$("$PFLEX" pfi "$tmp/lone.csv" --json --draws 0 2> /dev/null)
set -e
[ $rc -eq 1 ] || fail "single-run group: exit $rc, expected 1"
grep -q "group 'lone': no PFI: the group has a single run" "$tmp/err" || fail "single-run error"
printf '%s' "$json" | has '"error": "the group has a single run' || fail "single-run JSON error"

# Noise so large that some draws give a negative power: the CI rests on fewer
# draws than asked for, and the output says so (table note, JSON draws_used).
printf 'group,gpu,gpus,cap_w,power_w,tokens_per_s,power_sd\nnoisy,H200,8,200,1600,700,900\nnoisy,H200,8,700,4400,1000,\n' > "$tmp/noisy.csv"
out=$("$PFLEX" pfi "$tmp/noisy.csv" --draws 1000)
echo "$out" | has -E 'noisy: CI from [0-9]+ of 1000 draws' || fail "no note on dropped draws: $out"
used=$(jget "$("$PFLEX" pfi "$tmp/noisy.csv" --draws 1000 --json)" draws_used)
# P(1600 + 900 Z <= 0) = P(Z <= -1.78) = 3.8%: about 38 of 1000 dropped.
[ "$used" -gt 900 ] && [ "$used" -lt 1000 ] || fail "draws_used $used, expected about 962"
[ "$(jget "$("$PFLEX" pfi "$tmp/runs.csv" --draws 100 --json)" draws_used)" = 100 ] ||
  fail "draws_used on clean data"

# Output that cannot be written (a full disk) is an error, not a silent exit 0.
if [ -w /dev/full ]; then
  set +e; "$PFLEX" pfi "$tmp/runs.csv" --json --draws 0 > /dev/full 2> "$tmp/err"; rc=$?; set -e
  [ $rc -eq 1 ] || fail "write to a full disk: exit $rc, expected 1"
  grep -q "cannot write to standard output" "$tmp/err" || fail "full-disk message: $(cat "$tmp/err")"
fi

# --set keeps only runs of that set; --noise repeat ignores the runs' tiny SDs.
printf 'group,gpu,gpus,cap_w,power_w,tokens_per_s,power_sd,tokens_sd,set\n%s\n%s\n%s\n%s\n' \
  'h,H200,8,300,3000,800,0.012,0.004,headline' 'h,H200,8,700,5000,1000,0.02,0.005,headline' \
  'v,H200,8,300,2000,500,,,validation' 'v,H200,8,700,5000,1000,,,validation' > "$tmp/sets.csv"
out=$("$PFLEX" pfi "$tmp/sets.csv" --set headline --csv --draws 0)
echo "$out" | has '^h,' || fail "--set headline lost group h: $out"
echo "$out" | has '^v,' && fail "--set headline kept group v: $out"
set +e; "$PFLEX" pfi "$tmp/sets.csv" --set nope > /dev/null 2> "$tmp/err"; rc=$?; set -e
[ $rc -eq 1 ] && grep -q "no run has set 'nope'" "$tmp/err" || fail "--set nope: exit $rc, $(cat "$tmp/err")"
# Group h: PFI = (1 - 0.6) / (1 - 0.8) = 2. Its SDs are 1e-5 relative (a CI of
# width ~0.0002); the default-CV interval of this curve is [1.8898, 2.1220]
# (tests/unit/test_pfi.c), so repeat noise gives a low end under 1.95.
lo_run=$(jget "$("$PFLEX" pfi "$tmp/sets.csv" --set headline --json)" ci_low)
lo_rep=$(jget "$("$PFLEX" pfi "$tmp/sets.csv" --set headline --json --noise repeat)" ci_low)
awk -v a="$lo_run" -v b="$lo_rep" 'BEGIN { exit !(a > 1.999 && b < 1.95 && b > 1.85) }' ||
  fail "--noise: ci_low run $lo_run, repeat $lo_rep"

# Data that is not measured says so, once per kind.
printf 'group,gpu,gpus,cap_w,power_w,tokens_per_s,provenance\n%s\n%s\n%s\n%s\n' \
  's,H200,8,300,3000,800,simulated' 's,H200,8,700,5000,1000,simulated' \
  'r,H200,8,300,3000,800,reconstructed' 'r,H200,8,700,5000,1000,reconstructed' > "$tmp/prov.csv"
"$PFLEX" pfi "$tmp/prov.csv" --draws 0 > /dev/null 2> "$tmp/err"
[ "$(grep -c "holds simulated data" "$tmp/err")" = 1 ] || fail "simulated notice: $(cat "$tmp/err")"
[ "$(grep -c "holds reconstructed data" "$tmp/err")" = 1 ] || fail "reconstructed notice: $(cat "$tmp/err")"
"$PFLEX" pfi "$tmp/runs.csv" --draws 0 > /dev/null 2> "$tmp/err"
has "holds" "$tmp/err" && fail "notice on measured data: $(cat "$tmp/err")"

# A negative interval (area PFIs of the reference set's flat PT groups) reads
# "-0.006 to -0.005", not "-0.006--0.005"; a non-negative one keeps "a-b".
ref="$(cd "$(dirname "$0")/../.." && pwd)/data/reference/runs.csv"
"$PFLEX" pfi "$ref" --definition area --draws 2000 > "$tmp/area" 2>/dev/null
has -E -- ' -[0-9.]+ to -[0-9.]+ *$' "$tmp/area" || fail "area: no negative interval written with 'to'"
has -E -- '[0-9]--[0-9]' "$tmp/area" && fail "area: an interval with '--': $(grep -E -- '[0-9]--[0-9]' "$tmp/area" | head -1)"
has -E -- ' [0-9.]+-[0-9.]+ *$' "$tmp/area" || fail "area: no non-negative interval written 'a-b'"

# Threads: the same output, exit status and messages whatever their number,
# with a group that has no PFI (one run) among the others.
"$PFLEX" twin population --jobs 40 --seed 3 --out "$tmp/pop.csv" > /dev/null
sed -n 2p "$tmp/pop.csv" | sed 's/^[^,]*,/lonely,/' >> "$tmp/pop.csv"
for fmt in "" --json --csv; do
  set +e
  "$PFLEX" pfi "$tmp/pop.csv" --draws 300 --threads 1 $fmt > "$tmp/t1" 2>&1; rc1=$?
  "$PFLEX" pfi "$tmp/pop.csv" --draws 300 --threads 3 $fmt > "$tmp/t3" 2>&1; rc3=$?
  set -e
  [ $rc1 -eq 1 ] && [ $rc3 -eq 1 ] || fail "threads $fmt: exit $rc1 / $rc3, expected 1 (group 'lonely')"
  cmp -s "$tmp/t1" "$tmp/t3" || fail "threads $fmt: 1 and 3 threads differ: $(diff "$tmp/t1" "$tmp/t3" | head -5)"
  has "lonely" "$tmp/t1" || fail "threads $fmt: no line for group 'lonely'"
done

# Usage errors exit 2; help lists every option.
for bad in "--definition foo" "--noise x" "--exclude none" "--draws -1" "--grid x" "--bogus" "--threads 1025" "--threads -1"; do
  set +e; "$PFLEX" pfi "$tmp/runs.csv" $bad > /dev/null 2>&1; rc=$?; set -e
  [ $rc -eq 2 ] || fail "'$bad' exit $rc, expected 2"
done
set +e; "$PFLEX" pfi > /dev/null 2>&1; rc=$?; set -e
[ $rc -eq 2 ] || fail "no file: exit $rc"
help=$("$PFLEX" help pfi)
for o in --grid --definition --draws --seed --power-cv --tput-cv --exclude --noise-k --unit --tput-column --noise --set --json --csv --threads; do
  echo "$help" | has -- "$o" || fail "help lacks $o"
done
echo "pfi_cli: ok"
