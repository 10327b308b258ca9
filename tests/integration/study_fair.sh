#!/usr/bin/env bash
# Issue 12 items 3, 4, 6 end to end: the study's objectives (both reported),
# optimal's shrinkage toward the equal cut on mixed-GPU clusters of the twin
# (A100, H100, H200 and the PCIe H100) under the progress objective from the
# population prior alone, and LOCO folds that cannot be fitted reported
# without a number. Asserted: the issue's target that is met (worse than
# equal in at most 1% of workloads at every cut); the one that is not (90%
# of the gap after two rounds) is printed, met or not (docs/study.md).
source "$(dirname "$0")/cli_common.bash"
set -e

"$PFLEX" twin population --jobs 100 --seed 7 --gpus A100,H100,H200,H100-PCIE \
  --out "$tmp/pop.csv" >/dev/null 2>&1 || fail "twin population --gpus"
for z in 0 1; do
  "$PFLEX" study "$tmp/pop.csv" --json --workloads 40 --scenarios random --objective progress \
    --model prior --strategies equal,optimal,oracle --cuts 20:40:5 --rounds 2 --shrink "$z" \
    >"$tmp/z$z.json" 2>"$tmp/z$z.err" || fail "study --shrink $z: $(cat "$tmp/z$z.err")"
done
grep -q "note: --model prior" "$tmp/z1.err" || fail "no note on --model prior"
python3 - "$tmp/z0.json" "$tmp/z1.json" <<'EOF' || fail "shrinkage on mixed clusters"
import json, sys
plain, shrunk = (json.load(open(p)) for p in sys.argv[1:3])
assert shrunk["objective"] == "progress" and shrunk["shrink"] == 1 and plain["shrink"] == 0
for r in shrunk["results"]:
    assert r["other"]["objective"] == "tokens" and "worse_than_equal" in r and r["progress"] > 0
    if r["strategy"] in ("equal", "oracle"):
        assert r["worse_than_equal"] == 0, r
def get(d, pred, rnd, key):
    v = {r["cut"]: r[key] for r in d["results"]
         if r["strategy"] == "optimal" and r["prediction"] == pred and r["round"] == rnd}
    assert len(v) == 5, v
    return v
mean = lambda v: sum(v.values()) / len(v)
for rnd in (0, 2):  # the prior alone, and after two closed-loop rounds
    g0, g1 = get(plain, "prior", rnd, "gap_recovered"), get(shrunk, "prior", rnd, "gap_recovered")
    w0, w1 = get(plain, "prior", rnd, "worse_than_equal"), get(shrunk, "prior", rnd, "worse_than_equal")
    print(f"prior round {rnd}: gap recovered 20-40% without / with shrinkage: "
          f"{mean(g0):.1%} / {mean(g1):.1%}; worse than equal {mean(w0):.1%} / {mean(w1):.1%}")
    if rnd == 2:
        print(f"  issue 12 target, gap >= 90% at every cut after two rounds: {min(g1.values()):.1%} "
              f"at worst, {'met' if min(g1.values()) >= 0.9 else 'NOT met'}")
        print(f"  worse than equal after two rounds: {max(w1.values()):.1%} at worst")
        assert max(w1.values()) <= 0.01, w1
# Issue 12: from a prior alone optimal is worse than equal in at most 1% of
# the workloads, at every cut; with the PFI known (shape unknown) too.
for pred in ("prior", "true"):
    w = get(shrunk, pred, 0, "worse_than_equal")
    print(f"{pred} round 0, worse than equal with shrinkage: {max(w.values()):.1%} at worst")
    assert max(w.values()) <= 0.01, (pred, w)
EOF

# LOCO honest: without arch and task columns every group is one cluster,
# which cannot be left out: no LOCO number (null), and a note says so.
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "arch" || $i == "task") drop[i] = 1 }
  { out = ""; for (i = 1; i <= NF; i++) if (!(i in drop)) out = out (out == "" ? "" : OFS) $i; print out }' \
  "$tmp/pop.csv" >"$tmp/bare.csv"
"$PFLEX" study "$tmp/bare.csv" --json --workloads 5 --scenarios random --cuts 30 \
  >"$tmp/bare.json" 2>"$tmp/bare.err" || fail "study without arch/task: $(cat "$tmp/bare.err")"
grep -q "LOCO folds could not be fitted" "$tmp/bare.err" || fail "no note on the unfitted LOCO folds"
python3 - "$tmp/bare.json" <<'EOF' || fail "LOCO without a fold"
import json, sys
d = json.load(open(sys.argv[1]))
assert all(p["loco"] is None and p["loo"] is not None for p in d["predictions"])
loco = [r for r in d["results"] if r["prediction"] == "loco"]
assert loco and all(r["workloads"] == 0 and r["gap_recovered"] is None
                    and r["tokens_per_s"] is None for r in loco)
assert all(r["workloads"] == 5 for r in d["results"] if r["prediction"] != "loco")
EOF

# The default objective is the paper's, and says so.
"$PFLEX" study --workloads 5 --cuts 30 --scenarios production >"$tmp/ref.txt" 2>/dev/null ||
  fail "default study"
grep -q "^objective: tokens (total throughput, the paper's)" "$tmp/ref.txt" ||
  fail "the study does not print its objective"
echo "study_fair: ok"
