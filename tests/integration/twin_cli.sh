#!/usr/bin/env bash
# End-to-end test of `pflex twin`: the reference set rebuilds byte-identically
# and matches the committed one, check passes on it, population and plot work.
set -euo pipefail
: "${PFLEX:?}" "${PFLEX_SOURCE_DIR:?}"
# Under ASan builds: ignore the font stack's one-time allocations (see the file).
export LSAN_OPTIONS="suppressions=$PFLEX_SOURCE_DIR/tests/integration/lsan-plplot.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PFLEX" twin reference --out "$tmp/a" --quiet >/dev/null
out=$("$PFLEX" twin reference --out "$tmp/b/" --json) # a trailing slash: no "//" in the path printed
echo "$out" | grep -qF "\"$tmp/b/runs.csv\"" || fail "twin reference --out DIR/: path printed: $out"
cmp "$tmp/a/runs.csv" "$tmp/b/runs.csv" || fail "reference is not deterministic"
cmp "$tmp/a/runs.csv" "$PFLEX_SOURCE_DIR/data/reference/runs.csv" || fail "committed set differs from a rebuild"
[ "$(wc -l <"$tmp/a/runs.csv")" -eq 190 ] || fail "expected 189 runs"
head -1 "$tmp/a/runs.csv" | grep >/dev/null '^group,gpu,gpus,cap_w,power_w,tokens_per_s,power_sd,tokens_sd,model,arch,task,seq_len,batch,ep,compile,grad_ckpt,set,provenance,.*dram_active' \
  || fail "unexpected header"

out=$("$PFLEX" twin check "$PFLEX_SOURCE_DIR/data/reference/runs.csv" 2>/dev/null) || fail "check failed on the committed set"
echo "$out" | grep >/dev/null "Dense FT H200x16 Llama-3.1-70B" || fail "check output lacks a group"
echo "$out" | grep >/dev/null "LOO" || fail "check output lacks the DRAM fit"
"$PFLEX" twin check --json "$PFLEX_SOURCE_DIR/data/reference/runs.csv" 2>/dev/null | grep >/dev/null '"r2_loo"' || fail "json"

# A tampered set must fail: scale the uncapped throughput of one group.
awk -F, 'BEGIN{OFS=","} NR>1 && $1=="Dense PT H200x8 Qwen3-32B compile" && $4==700 {$6=$6*1.05} {print}' \
  "$PFLEX_SOURCE_DIR/data/reference/runs.csv" >"$tmp/bad.csv"
set +e
"$PFLEX" twin check "$tmp/bad.csv" >/dev/null 2>&1; rc=$?
set -e
[ "$rc" -eq 1 ] || fail "check on a tampered set: expected exit 1, got $rc"
# One value of one run changed by 3% (throughput at 400 W) moves that group's
# PFI by about 0.02, past the 0.01 tolerance: exit 1 and the group named as a miss.
awk -F, 'BEGIN{OFS=","} NR>1 && $1=="Dense PT H200x8 Qwen3-32B compile" && $4==400 {$6=$6*1.03} {print}' \
  "$PFLEX_SOURCE_DIR/data/reference/runs.csv" >"$tmp/bad1.csv"
set +e
out=$("$PFLEX" twin check "$tmp/bad1.csv" 2>/dev/null); rc=$?
set -e
[ "$rc" -eq 1 ] || fail "check on one corrupted value: expected exit 1, got $rc"
echo "$out" | grep >/dev/null "^Dense PT H200x8 Qwen3-32B compile .* own .*MISS" || fail "the miss is not named"
[ "$(echo "$out" | grep -c MISS)" -eq 1 ] || fail "exactly one miss expected"
"$PFLEX" twin check --strict "$PFLEX_SOURCE_DIR/data/reference/runs.csv" >/dev/null 2>&1 || fail "--strict"

"$PFLEX" twin population --jobs 5 --seed 3 --out "$tmp/p1.csv" >/dev/null
"$PFLEX" twin population --jobs 5 --seed 3 --out "$tmp/p2.csv" >/dev/null
cmp "$tmp/p1.csv" "$tmp/p2.csv" || fail "population not deterministic"
[ "$(wc -l <"$tmp/p1.csv")" -eq 31 ] || fail "expected 30 population runs"
grep >/dev/null ',simulated,' "$tmp/p1.csv" || fail "population lacks provenance"
"$PFLEX" twin population --jobs 40 --seed 3 --gpus A100,H100,H200,L40S,H100-PCIE --out "$tmp/mix.csv" >/dev/null ||
  fail "population --gpus"
for g in A100 H100 H200 L40S H100-PCIE; do
  grep >/dev/null "^sim-[0-9]* [^,]* ${g}x[0-9]* [^,]*,${g}," "$tmp/mix.csv" || fail "--gpus drew no $g job"
done
[ "$(cut -d, -f2 "$tmp/mix.csv" | sort -u | grep -vc '^gpu$')" -eq 5 ] || fail "--gpus drew other types"
# the L40S sweep spans its own 100-350 W range
grep >/dev/null ',L40S,[0-9]*,100,' "$tmp/mix.csv" || fail "no L40S run at its 100 W minimum"
grep >/dev/null ',L40S,[0-9]*,350,' "$tmp/mix.csv" || fail "no L40S run at its 350 W default"
set +e
msg=$("$PFLEX" twin population --jobs 2 --gpus H100,MI300X 2>&1); [ $? -eq 2 ] || fail "unknown --gpus type should be a usage error"
set -e
echo "$msg" | grep >/dev/null "does not model GPU type 'MI300X'" || fail "unknown type not named: $msg"

"$PFLEX" twin plot --out "$tmp/fig.svg" "$PFLEX_SOURCE_DIR/data/reference/runs.csv" >/dev/null 2>&1 || fail "plot"
grep >/dev/null '<svg' "$tmp/fig.svg" || fail "not an SVG"
"$PFLEX" twin plot --out "$tmp/fig.png" "$tmp/p1.csv" >/dev/null 2>&1 || fail "plot png"
set +e
"$PFLEX" twin plot --out "$tmp/fig.jpg" >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad extension should be a usage error"
"$PFLEX" twin bogus >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown subcommand should be a usage error"
"$PFLEX" help twin | grep >/dev/null -- "--jobs" || fail "help"
echo "twin_cli: ok"
