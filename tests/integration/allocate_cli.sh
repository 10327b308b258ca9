#!/usr/bin/env bash
# End-to-end test of `pflex allocate`: a runs CSV and a jobs JSON file, every
# strategy, the output formats, the target, infeasible targets, usage errors.
set -euo pipefail
: "${PFLEX:?PFLEX must name the built pflex program}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$tmp/runs.csv" <<'EOF'
group,gpu,gpus,cap_w,power_w,tokens_per_s,arch,task,dram_active,mem_copy_util
dense-pt,H200,8,200,1600,4000,dense,pt,0.30,0.20
dense-pt,H200,8,400,3150,7600,dense,pt,0.31,0.21
dense-pt,H200,8,600,4600,9700,dense,pt,0.31,0.21
dense-pt,H200,8,700,5200,10000,dense,pt,0.31,0.21
moe-ft,H200,8,200,1600,7000,moe,ft,0.50,0.40
moe-ft,H200,8,400,3000,9300,moe,ft,0.50,0.40
moe-ft,H200,8,600,3900,9900,moe,ft,0.50,0.40
moe-ft,H200,8,700,4100,10000,moe,ft,0.50,0.40
EOF

# Equal cut by hand: 30% of 9300 W = 2790 W, shares by P_max 5200:4100:
# dense 5200 - 2790*5200/9300 = 3640, moe 4100 - 2790*4100/9300 = 2870.
out=$("$PFLEX" allocate "$tmp/runs.csv" --cut 30 --strategy equal --csv)
grep -q '^dense-pt,8,3640,' <<<"$out" || fail "equal dense-pt: $out"
grep -q '^moe-ft,8,2870,' <<<"$out" || fail "equal moe-ft: $out"

# Every strategy: total within the target (6510 W), JSON well formed.
for s in equal moe-ft dram pfi optimal oracle; do
  "$PFLEX" allocate "$tmp/runs.csv" --cut 30 --strategy "$s" --json >"$tmp/$s.json" ||
    fail "strategy $s failed"
  python3 - "$tmp/$s.json" <<'EOF' || fail "strategy $s: bad JSON or target exceeded"
import json, sys
d = json.load(open(sys.argv[1]))
assert abs(d["target_w"] - 6510) < 1e-6, d["target_w"]
tot = sum(j["power_w"] for j in d["jobs"])
assert tot <= d["target_w"] + 1e-9, tot
for j in d["jobs"]:
    assert j["floor_w"] - 1e-9 <= j["power_w"] <= j["p_max_w"] + 1e-9
    assert 200 <= j["cap_w"] <= 700
EOF
done
# The oracle is at least every other strategy (true curves here).
python3 - "$tmp" <<'EOF' || fail "oracle below another strategy"
import json, sys
t = {s: json.load(open(f"{sys.argv[1]}/{s}.json"))["total_tput"]
     for s in ["equal", "moe-ft", "dram", "pfi", "optimal", "oracle"]}
assert all(t["oracle"] >= v - 1e-9 for v in t.values()), t
EOF

# Human table names the jobs and a total.
out=$("$PFLEX" allocate "$tmp/runs.csv" --target-w 7000)
grep -q '^total' <<<"$out" || fail "no total line: $out"
grep -q 'strategy optimal' <<<"$out" || fail "default strategy is not optimal: $out"

# Infeasible: the floors are 3200 W.
if "$PFLEX" allocate "$tmp/runs.csv" --target-w 3000 2>"$tmp/err"; then fail "infeasible accepted"; fi
grep -q 'deepest feasible cut is 65.59%' "$tmp/err" || fail "no deepest cut: $(cat "$tmp/err")"

# A jobs JSON: a PFI-derived curve, a parametric curve, measured points, a floor.
cat >"$tmp/jobs.json" <<'EOF'
{"jobs": [
  {"name": "a", "gpus": 8, "gpu": "H200", "p_max": 5000, "t_max": 10000, "pfi": 1.3,
   "arch": "dense", "task": "pt", "dram_copy": 0.1},
  {"name": "b", "gpus": 8, "p_max": 4200, "t_max": 12000, "params": {"c": 0.3, "knee": 0.6},
   "arch": "moe", "task": "ft", "dram_copy": 0.3, "pfi": 2.0, "min_tput": 11000},
  {"name": "c", "gpus": 16, "points": [[3200, 9000, 200], [8000, 14000, 500], [9600, 15000, 700]],
   "dram_copy": 0.2, "weight": 2}
]}
EOF
for s in equal moe-ft dram pfi optimal oracle; do
  "$PFLEX" allocate "$tmp/jobs.json" --cut 25 --strategy "$s" --json >"$tmp/j.json" ||
    fail "jobs.json strategy $s failed"
  python3 - "$tmp/j.json" <<'EOF' || fail "jobs.json $s: bound or floor broken"
import json, sys
d = json.load(open(sys.argv[1]))
assert abs(d["target_w"] - 0.75 * (5000 + 4200 + 9600)) < 1e-6
assert sum(j["power_w"] for j in d["jobs"]) <= d["target_w"] + 1e-9
b = d["jobs"][1]
assert b["tput"] >= 11000 * (1 - 1e-9), b   # the throughput floor holds
EOF
done

# --objective progress: optimal maximizes sum of GPUs x T/T_max instead of
# total throughput. Each objective's allocation is at least as good as the
# other's on its own measure (no job is starved for faster ones).
"$PFLEX" allocate "$tmp/runs.csv" --cut 30 --json >"$tmp/tok.json" 2>/dev/null || fail "tokens objective"
"$PFLEX" allocate "$tmp/runs.csv" --cut 30 --objective progress --json >"$tmp/prog.json" 2>/dev/null ||
  fail "progress objective"
python3 - "$tmp/tok.json" "$tmp/prog.json" <<'EOF' || fail "objectives do not each win on their own measure"
import json, sys
tok, prog = (json.load(open(p)) for p in sys.argv[1:3])
def tokens(d): return sum(j["tput"] for j in d["jobs"])
def progress(d): return sum(j["gpus"] * j["tput"] / j["t_max"] for j in d["jobs"])
tol = 1e-6
assert tokens(tok) >= tokens(prog) * (1 - tol), (tokens(tok), tokens(prog))
assert progress(prog) >= progress(tok) * (1 - tol), (progress(prog), progress(tok))
assert all(j["t_max"] > 0 for j in prog["jobs"])
assert abs(prog["weighted_tput"] - progress(prog)) < 1e-6 * progress(prog)
for d in (tok, prog):
    assert sum(j["power_w"] for j in d["jobs"]) <= d["target_w"] + 1e-9
EOF
set +e
"$PFLEX" allocate "$tmp/runs.csv" --cut 30 --objective speed >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad objective: want 2"
set -e

# Errors: usage (2) and bad files (1).
set +e
"$PFLEX" allocate "$tmp/runs.csv" >/dev/null 2>&1; [ $? -eq 2 ] || fail "no target: want exit 2"
"$PFLEX" allocate "$tmp/runs.csv" --cut 10 --strategy best >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad strategy: want 2"
echo '{"jobs": [{"name": "x", "gpus": 8, "p_max": -5}]}' >"$tmp/bad.json"
"$PFLEX" allocate "$tmp/bad.json" --cut 10 2>"$tmp/err"; [ $? -eq 1 ] || fail "bad p_max: want 1"
grep >/dev/null "job 1 ('x')" "$tmp/err" || fail "error does not name the job: $(cat "$tmp/err")"
# A typo in a jobs file is refused naming the key and the job (issue 14), in the
# job, in its params and at the top level.
echo '{"jobs": [{"name": "x", "gpus": 8, "p_max": 5000, "t_max": 100, "pfi": 1.3, "wieght": 2}]}' >"$tmp/typo.json"
"$PFLEX" allocate "$tmp/typo.json" --cut 10 >/dev/null 2>"$tmp/err"; [ $? -eq 1 ] || fail "typo: want exit 1"
grep >/dev/null "field 'wieght': job 1 ('x'): unknown field" "$tmp/err" || fail "typo not named: $(cat "$tmp/err")"
echo '{"jobs": [{"name": "y", "gpus": 8, "p_max": 5000, "t_max": 100, "params": {"kne": 0.5}}]}' >"$tmp/typo2.json"
"$PFLEX" allocate "$tmp/typo2.json" --cut 10 >/dev/null 2>"$tmp/err"; [ $? -eq 1 ] || fail "params typo: want exit 1"
grep >/dev/null "field 'kne': job 1 ('y'): unknown field in params" "$tmp/err" || fail "params typo: $(cat "$tmp/err")"
echo '{"unti": "tokens", "jobs": []}' >"$tmp/typo3.json"
"$PFLEX" allocate "$tmp/typo3.json" --cut 10 >/dev/null 2>"$tmp/err"; [ $? -eq 1 ] || fail "top-level typo: want exit 1"
grep >/dev/null "field 'unti': unknown field" "$tmp/err" || fail "top-level typo: $(cat "$tmp/err")"
echo '{"jobs": [{"name": "z", "gpus": 8, "p_max": 5000, "weight": "2"}]}' >"$tmp/type.json"
"$PFLEX" allocate "$tmp/type.json" --cut 10 >/dev/null 2>"$tmp/err"; [ $? -eq 1 ] || fail "string weight: want exit 1"
grep >/dev/null "field 'weight': job 1 ('z'): not a number" "$tmp/err" || fail "string weight: $(cat "$tmp/err")"
"$PFLEX" help allocate | grep >/dev/null -- '--strategy' || fail "help lacks --strategy"
echo ok
