#!/usr/bin/env bash
# Integration test of GPUs other than the H100/H200 (issue 12): `pflex pfi`
# and `pflex study` run unmodified on a runs file of a GPU type pflex does not
# know (tests/fixtures/unknown_gpu_samples.csv, hand-made, throughput in a
# `throughput` column) and on one whose highest cap is below its GPU's
# default limit (tests/fixtures/a100_to_340w.csv, simulated A100 runs up to
# 340 W of 400 W); the highest-cap run is then the reference run, with a note
# on stderr and in JSON; --reference-cap chooses another; the store's import
# still wants the uncapped run; twin population --gpus feeds the study.
source "$(dirname "$0")/cli_common.bash"
set -e
has() { grep "$@" > /dev/null; }
A100="$PFLEX_SOURCE_DIR/tests/fixtures/a100_to_340w.csv"
UNK="$PFLEX_SOURCE_DIR/tests/fixtures/unknown_gpu_samples.csv"

# --- highest cap below the default limit: pfi
"$PFLEX" pfi "$A100" --draws 200 >out 2>err || fail "pfi on the A100 file: $(cat err)"
[ "$(grep -c '^sim-.* A100 ' out)" -eq 8 ] || fail "pfi: expected 8 A100 groups: $(cat out)"
! grep -q ' - ' out || fail "pfi: a group without a value: $(cat out)"
has "no run at the A100's 400 W default limit: its highest cap, 340 W, is the reference (uncapped) run" err ||
  fail "pfi: no reference note: $(cat err)"
has "3 more group(s) whose reference run is their highest cap" err || fail "pfi: notes not bounded: $(cat err)"
"$PFLEX" pfi "$A100" --draws 0 --json >out 2>/dev/null || fail "pfi --json"
[ "$(grep -c '"reference_note": "group .*400 W default limit: its highest cap, 340 W' out)" -eq 8 ] ||
  fail "pfi --json: expected a reference_note per group: $(cat out)"
# runs count the reference run: 5 caps per group
[ "$(grep -c '"runs": 5' out)" -eq 8 ] || fail "pfi --json: runs"

# --- --reference-cap: the 280 W run is the reference, runs above it left out
"$PFLEX" pfi "$A100" --draws 0 --json --reference-cap 280 >out 2>err || fail "--reference-cap 280: $(cat err)"
[ "$(grep -c '"runs": 4' out)" -eq 8 ] || fail "--reference-cap 280: expected 4 runs per group"
has "note: --reference-cap 280: runs above 280 W are left out" err || fail "--reference-cap note: $(cat err)"
set +e
"$PFLEX" pfi "$A100" --reference-cap 290 >out 2>err; rc=$?
set -e
[ "$rc" -eq 1 ] || fail "--reference-cap 290 (no such run) should exit 1, got $rc"
has "group 'sim-0001 MoE FT A100x4 Mixtral-8x7B' has no run at the reference cap 290 W (its highest cap is 280 W)" err ||
  fail "--reference-cap 290: $(cat err)"
set +e
"$PFLEX" pfi "$A100" --reference-cap 0 >out 2>err; rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--reference-cap 0 should be a usage error, got $rc"

# --- highest cap below the default limit: study
"$PFLEX" study "$A100" --workloads 20 >out 2>err || fail "study on the A100 file: $(cat err)"
has '^headline (production mix, 30% cut)' out || fail "study: no headline: $(cat out)"
has "is the reference (uncapped) run" err || fail "study: no reference note"
"$PFLEX" study "$A100" --workloads 20 --reference-cap 280 >/dev/null 2>err || fail "study --reference-cap: $(cat err)"

# --- allocate: every cap within the A100's 100 W minimum and the 340 W reference
"$PFLEX" allocate "$A100" --cut 30 --csv >out 2>/dev/null || fail "allocate on the A100 file"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  { if ($(c["cap_w"]) < 100 - 1e-9 || $(c["cap_w"]) > 340 + 1e-9) bad = 1 } END { exit bad }' out ||
  fail "allocate: a cap outside 100-340 W: $(cat out)"
"$PFLEX" allocate "$A100" --cut 30 --json >out 2>/dev/null || fail "allocate --json on the A100 file"
[ "$(grep -c '"reference_note": "group .*its highest cap, 340 W, is the reference' out)" -eq 8 ] ||
  fail "allocate --json: expected a reference_note per job: $(cat out)"
"$PFLEX" allocate "$PFLEX_SOURCE_DIR/data/reference/runs.csv" --cut 30 --json >out 2>/dev/null
! grep -q '"reference_note"' out || fail "allocate --json: no note on the reference set"

# --- an unknown GPU type, throughput in a `throughput` column
"$PFLEX" pfi "$UNK" --tput-column throughput --unit samples --draws 200 >out 2>err ||
  fail "pfi on the unknown-GPU file: $(cat err)"
[ "$(grep -c ' MI300X ' out)" -eq 6 ] || fail "pfi: expected 6 MI300X groups: $(cat out)"
! grep -q ' - ' out || fail "pfi: an unknown-GPU group without a value: $(cat out)"
has "GPU type 'MI300X' is not in pflex's GPU table: its highest cap, 750 W, is the reference (uncapped) run" err ||
  fail "pfi: no unknown-GPU note: $(cat err)"
"$PFLEX" study "$UNK" --tput-column throughput --unit samples --workloads 20 >out 2>err ||
  fail "study --tput-column on the unknown-GPU file: $(cat err)"
has '^headline (production mix, 30% cut)' out || fail "study (unknown GPU): no headline: $(cat out)"
has 'relative units' out || fail "study (unknown GPU): samples/s must be relative units"
set +e
"$PFLEX" study "$UNK" --workloads 20 >out 2>err; rc=$?
set -e
[ "$rc" -eq 1 ] || fail "study without --tput-column should fail on a file without tokens_per_s, got $rc"
# the JSON field of an unknown type
"$PFLEX" stats "$UNK" --tput-column throughput --unit samples --draws 0 --json >out 2>/dev/null ||
  fail "stats on the unknown-GPU file"
[ "$(grep -c '"reference_note"' out)" -eq 6 ] || fail "stats --json: expected 6 reference notes"

# --- a jobs file: an A100 job's cap range is the A100's (100-400 W), not 200-700 W;
# a job on a type pflex does not know must give its cap range
cat > jobs.json <<'JSON'
{"jobs": [{"name": "a", "gpu": "A100", "gpus": 8, "p_max": 3000, "t_max": 1000, "pfi": 1.5},
          {"name": "h", "gpu": "H200", "gpus": 8, "p_max": 5200, "t_max": 2000, "pfi": 1.3}]}
JSON
"$PFLEX" allocate jobs.json --cut 40 --csv >out 2>err || fail "allocate an A100 jobs file: $(cat err)"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  $1 == "a" { if ($(c["cap_w"]) < 100 - 1e-9 || $(c["cap_w"]) > 400 + 1e-9) bad = 1; seen = 1 }
  END { exit bad || !seen }' out || fail "A100 job's cap outside 100-400 W: $(cat out)"
cat > unk.json <<'JSON'
[{"name": "m", "gpu": "MI300X", "gpus": 8, "p_max": 5000, "t_max": 1000, "pfi": 1.5}]
JSON
set +e
"$PFLEX" allocate unk.json --cut 20 >out 2>err; rc=$?
set -e
[ "$rc" -eq 1 ] || fail "a job on an unknown GPU without cap limits should be refused, got $rc"
has "cap_min_w" err || fail "unknown-GPU job: the message must name cap_min_w: $(cat err)"
has "not in pflex's GPU table" err || fail "unknown-GPU job: $(cat err)"
sed -e 's/"pfi": 1.5/"pfi": 1.5, "cap_min_w": 300, "cap_max_w": 750/' unk.json >unk2.json
"$PFLEX" allocate unk2.json --cut 20 >/dev/null 2>err || fail "unknown GPU with its cap range: $(cat err)"

# --- the store keeps its rule: a whole group needs its uncapped run
set +e
"$PFLEX" import "$A100" --db "$tmp/s.db" >out 2>err; rc=$?
set -e
[ "$rc" -eq 1 ] || fail "import of a group below its default limit should be refused, got $rc"
has "below the A100's 400 W default limit" err || fail "import message: $(cat err)"

# --- a mixed twin cluster (A100, H100, H200, L40S, H100 PCIe) through the study
"$PFLEX" twin population --jobs 40 --seed 4 --gpus A100,H100,H200,L40S,H100-PCIE --out mix.csv >/dev/null
"$PFLEX" study mix.csv --workloads 20 >out 2>err || fail "study on a mixed cluster: $(cat err)"
has '^headline' out || fail "study on a mixed cluster: no headline"
! grep -q "reference (uncapped) run" err || fail "twin runs sit at their default limit: no note expected"
echo "gpus_cli: ok"
