#!/usr/bin/env bash
# End-to-end test of `pflex study`: the reference set (small protocol), the
# JSON results array, definitions (oracle 100%, equal 0%), determinism, the
# prior fallback without telemetry, and the production scenario's need of a
# task column.
set -euo pipefail
: "${PFLEX:?PFLEX must name the built pflex program}"
: "${PFLEX_SOURCE_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ref="$PFLEX_SOURCE_DIR/data/reference/runs.csv"

"$PFLEX" study "$ref" --workloads 20 --jobs 30 --cuts 0,20,30 --rounds 1 --json \
  >"$tmp/a.json" 2>/dev/null || fail "study on the reference set failed"
python3 - "$tmp/a.json" <<'EOF' || fail "study JSON"
import json, math, sys
d = json.load(open(sys.argv[1]))
assert d["groups"] == 25 and d["set"] == "headline", (d["groups"], d["set"])
keys = {"scenario", "strategy", "prediction", "round", "cut", "tokens_per_s", "loss_vs_oracle",
        "gap_recovered", "gain_per_job"}
res = d["results"]
assert all(keys <= set(r) for r in res)
preds = {r["prediction"] for r in res}
assert {"true", "in-sample", "loo", "loco"} <= preds, preds
for r in res:
    if r["strategy"] == "oracle" and r["cut"] > 0:
        assert abs(r["gap_recovered"] - 1) < 1e-12 and abs(r["loss_vs_oracle"]) < 1e-12
    if r["strategy"] == "equal" and r["cut"] > 0:
        assert abs(r["gap_recovered"]) < 1e-12 and abs(r["gain_per_job"]) < 1e-9
    if r["cut"] == 0:
        assert r["gap_recovered"] is None  # no gap to recover
    assert r["above_oracle"] == 0
    assert r["round"] in (0, 1) and (r["round"] == 0 or r["strategy"] == "optimal")
assert {(r["scenario"]) for r in res} == {"random", "production"}
assert d["headline"]["paper_gap_recovered"] == 0.63
EOF

# Same seed, same output; another seed, other numbers.
"$PFLEX" study "$ref" --workloads 20 --jobs 30 --cuts 0,20,30 --rounds 1 --json >"$tmp/b.json" 2>/dev/null
cmp -s "$tmp/a.json" "$tmp/b.json" || fail "same seed, different output"
"$PFLEX" study "$ref" --workloads 20 --jobs 30 --cuts 0,20,30 --seed 2 --json >"$tmp/c.json" 2>/dev/null
cmp -s "$tmp/a.json" "$tmp/c.json" && fail "another seed, same output"

# The human tables and the headline line.
out=$("$PFLEX" study "$ref" --workloads 10 --jobs 20 --cuts 30 2>/dev/null)
grep -q '^headline (production mix, 30% cut): pfi with in-sample' <<<"$out" || fail "no headline: $out"
grep -q '^production: gap recovered' <<<"$out" || fail "no gap table"

# Without telemetry: the prior, marked so. Without a task column: production refused.
python3 - "$ref" "$tmp/notel.csv" "$tmp/notask.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keep = ["group", "gpu", "gpus", "cap_w", "power_w", "tokens_per_s", "arch", "task", "set"]
for path, cols in ((sys.argv[2], keep), (sys.argv[3], [c for c in keep if c != "task"])):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
EOF
"$PFLEX" study "$tmp/notel.csv" --workloads 5 --jobs 10 --cuts 30 --json >"$tmp/p.json" 2>"$tmp/err" ||
  fail "study without telemetry failed: $(cat "$tmp/err")"
grep -q "fall back to the population prior" "$tmp/err" || fail "no prior note"
python3 -c "import json,sys; d=json.load(open('$tmp/p.json')); assert 'prior' in {r['prediction'] for r in d['results']}" ||
  fail "no prior predictions"
# Jobs never seen in fitting: a twin population, the model fitted on the reference set.
"$PFLEX" twin population --jobs 30 --seed 3 --out "$tmp/pop.csv" >/dev/null 2>&1 || fail "twin population"
"$PFLEX" study "$tmp/pop.csv" --train "$ref" --workloads 5 --jobs 20 --cuts 30 --json \
  >"$tmp/u.json" 2>"$tmp/err" || fail "study --train failed: $(cat "$tmp/err")"
python3 - "$tmp/u.json" "$ref" <<'EOF' || fail "study --train JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["train"] == sys.argv[2] and d["groups"] == 30
preds = {r["prediction"] for r in d["results"]}
assert preds == {"true", "unseen"}, preds
assert all("unseen" in p for p in d["predictions"])
EOF

set +e
"$PFLEX" study "$tmp/notask.csv" --workloads 5 --jobs 10 --cuts 30 >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] || fail "production without task: want exit 1"
grep -q "needs pretraining and fine-tuning groups" "$tmp/err" || fail "no task message: $(cat "$tmp/err")"
"$PFLEX" study "$tmp/notask.csv" --scenarios random --workloads 5 --jobs 10 --cuts 30 >/dev/null 2>&1
[ $? -eq 0 ] || fail "random without task should work"
"$PFLEX" study --workloads 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--workloads 0: want exit 2"
"$PFLEX" study --strategies best >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad strategy: want exit 2"
"$PFLEX" study --shape round >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad shape: want exit 2"
"$PFLEX" study --bandwidth 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "bandwidth 0: want exit 2"
set -e
# The family shape (the former default) runs and differs from the data shape.
"$PFLEX" study "$ref" --workloads 5 --jobs 20 --cuts 30 --shape family --json >"$tmp/f.json" 2>/dev/null ||
  fail "--shape family failed"
"$PFLEX" study "$ref" --workloads 5 --jobs 20 --cuts 30 --json >"$tmp/d.json" 2>/dev/null
cmp -s "$tmp/f.json" "$tmp/d.json" && fail "--shape family gives the data shape's output"
# --out DIR: a missing directory is created (as mkdir -p) before the study,
# and said so; one that cannot be made fails at once, naming it and why,
# before any study output.
"$PFLEX" study "$ref" --workloads 2 --jobs 10 --cuts 30 --out "$tmp/figs/new" >/dev/null 2>"$tmp/err" ||
  fail "study --out a missing directory failed: $(cat "$tmp/err")"
grep -q "created the output directory '$tmp/figs/new'" "$tmp/err" || fail "no note of the created directory"
for f in fig8.svg fig8.png fig4.svg fig4.png; do
  [ -s "$tmp/figs/new/$f" ] || fail "--out: no $f"
done
touch "$tmp/plain"
set +e
"$PFLEX" study "$ref" --out "$tmp/plain/sub" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ $rc -eq 1 ] || fail "--out under a file: want exit 1, got $rc"
grep -q "cannot create directory '$tmp/plain/sub': Not a directory" "$tmp/err" ||
  fail "--out under a file: message $(cat "$tmp/err")"
[ ! -s "$tmp/out" ] || fail "--out under a file: the study ran first"
echo ok
