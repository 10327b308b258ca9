#!/usr/bin/env bash
# Issue 12 items 3, 4, 6 end to end: the study's objectives (both reported),
# optimal's shrinkage toward the equal cut on mixed-GPU clusters of the twin
# (A100, H100, H200 and the PCIe H100) under the progress objective from the
# population prior alone, and LOCO folds that cannot be fitted reported
# without a number; mixed throughput units; allocate --shrink. Asserted, on
# two populations (seeds 7 and 3): the issue's target that is met (worse
# than equal in at most 1% of workloads at every cut, at round 0 from the
# prior alone and after two closed-loop rounds), and what the closed loop
# reaches with --shrink 1 (docs/study.md: 83.9-93.1% of the gap at every
# 20-40% cut after two rounds, 88.5% and 89.8% on average, asserted as at
# least 83% at every cut and 88% on average, each round learning more:
# 85.6% and 88.8% on average, 82.7% at worst, before the eighth wave,
# so both fail without it on seed 7; 80.8% and 84.7% before the seventh
# wave's nearest templates); the issue's 90% after two rounds, not met, is
# printed (met or not). On the reference set under progress, round 0 and,
# after two rounds, every prediction set is worse than equal in at most 1%
# of the workloads at every cut (before the eighth wave LOCO at 40% was
# worse in 7%, in-sample in 8%), also with --dither 0.06 at every round;
# with --dither 0.06 (ninth wave) round 0 is unchanged byte for byte and two
# rounds recover more on both seeds (fails without the dither).
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
"$PFLEX" twin population --jobs 100 --seed 3 --gpus A100,H100,H200,H100-PCIE \
  --out "$tmp/pop3.csv" >/dev/null 2>&1 || fail "twin population --seed 3"
"$PFLEX" study "$tmp/pop3.csv" --json --workloads 40 --scenarios random --objective progress \
  --model prior --strategies equal,optimal,oracle --cuts 20:40:5 --rounds 2 --shrink 1 \
  >"$tmp/s3.json" 2>"$tmp/s3.err" || fail "study seed 3: $(cat "$tmp/s3.err")"
python3 - "$tmp/z0.json" "$tmp/z1.json" "$tmp/s3.json" <<'EOF' || fail "shrinkage on mixed clusters"
import json, sys
plain, shrunk, seed3 = (json.load(open(p)) for p in sys.argv[1:4])
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
# What the closed loop reaches with --shrink 1 on both populations: every
# round learns, two rounds recover at least 83% of the gap at every cut and
# 88% on average, never worse than equal in more than 1% of the workloads.
for name, d in (("seed 7", shrunk), ("seed 3", seed3)):
    g = [get(d, "prior", r, "gap_recovered") for r in (0, 1, 2)]
    w = [get(d, "prior", r, "worse_than_equal") for r in (0, 2)]
    print(f"{name}: gap recovered after 0/1/2 rounds (mean of 20-40%): "
          + " / ".join(f"{mean(x):.1%}" for x in g) + f"; after two, {min(g[2].values()):.1%} at worst")
    assert mean(g[0]) < mean(g[1]) < mean(g[2]), (name, g)
    assert min(g[2].values()) >= 0.83 and mean(g[2]) >= 0.88, (name, g[2])
    assert max(w[0].values()) <= 0.01 and max(w[1].values()) <= 0.01, (name, w)
EOF

# The closed loop's dither (--dither 0.06, docs/study.md "Ninth wave"):
# a job round 1 leaves where it was observed is moved, budget-neutral, so
# that round 2 sees it at a second power. Round 0 stays as it was, byte for
# byte; two rounds recover more of the gap on both populations (seed 7:
# 89.6% against 88.5%, seed 3: 90.1% against 89.8%; asserted: more than
# without it, and at least 89% on seed 7), never worse than equal in more
# than 1% of the workloads in any round (round 1 pays for the dither).
for s in 7 3; do
  pop="$tmp/pop.csv"
  [ "$s" = 3 ] && pop="$tmp/pop3.csv"
  "$PFLEX" study "$pop" --json --workloads 40 --scenarios random --objective progress \
    --model prior --strategies equal,optimal,oracle --cuts 20:40:5 --rounds 2 --shrink 1 \
    --dither 0.06 >"$tmp/d$s.json" 2>"$tmp/d$s.err" || fail "study --dither seed $s: $(cat "$tmp/d$s.err")"
done
python3 - "$tmp/z1.json" "$tmp/d7.json" "$tmp/s3.json" "$tmp/d3.json" <<'EOF' || fail "dither"
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:5]]
def rows(d, rnd):
    return [r for r in d["results"] if r.get("round", 0) == rnd]
def get(d, rnd, key):
    v = {r["cut"]: r[key] for r in rows(d, rnd)
         if r["strategy"] == "optimal" and r["prediction"] == "prior"}
    assert len(v) == 5, v
    return v
mean = lambda v: sum(v.values()) / len(v)
for name, plain, dith in (("seed 7", runs[0], runs[1]), ("seed 3", runs[2], runs[3])):
    assert dith["dither"] == 0.06 and "dither" not in plain
    assert json.dumps(rows(plain, 0)) == json.dumps(rows(dith, 0)), name  # round 0 as it was
    g = [get(dith, r, "gap_recovered") for r in (1, 2)]
    g0 = get(plain, 2, "gap_recovered")
    print(f"{name} with --dither 0.06: gap recovered after 1/2 rounds (mean of 20-40%): "
          f"{mean(g[0]):.1%} / {mean(g[1]):.1%} (without: {mean(g0):.1%} after two); "
          f"issue 12's 90% at every cut {'met' if min(g[1].values()) >= 0.9 else 'NOT met'}")
    assert mean(g[1]) > mean(g0), (name, g[1], g0)
    for rnd in (0, 1, 2):
        w = get(dith, rnd, "worse_than_equal")
        assert max(w.values()) <= 0.01, (name, rnd, w)
assert mean(get(runs[1], 2, "gap_recovered")) >= 0.89
EOF

# The reference set under progress, the closed loop's fragile case: LOCO
# predictions at deep cuts (their band is calibrated on other clusters).
for dith in 0 0.06; do
  "$PFLEX" study --objective progress --rounds 2 --workloads 100 --shrink 1 --cuts 20:40:5 \
    --scenarios production --json --dither "$dith" >"$tmp/ref.json" 2>"$tmp/ref.err" ||
    fail "reference study: $(cat "$tmp/ref.err")"
  python3 - "$tmp/ref.json" "$dith" <<'EOF' || fail "reference set, progress, --dither $dith"
import json, sys
d = json.load(open(sys.argv[1]))
w = {(r["prediction"], r["round"], r["cut"]): r["worse_than_equal"] for r in d["results"]
     if r["strategy"] == "optimal"}
assert len([k for k in w if k[0] in ("loo", "loco") and k[1] == 0]) == 10, w
assert all(v <= 0.01 for k, v in w.items() if k[1] == 0), w
print(f"reference set, progress, --dither {sys.argv[2]}: LOCO at 40% after two rounds worse "
      f"than equal in {w['loco', 2, 0.4]:.0%} of the workloads")
assert all(v <= 0.01 for v in w.values()), w  # every round (the dither's round 1 included)
EOF
done

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
# Mixed throughput units (twin population --mixed-units): the same jobs, each
# in a unit of its own; progress does not depend on units (the study's
# progress results on the mixed column are those on tokens_per_s, but for
# Eq. 2, whose weights hold P_max / T_max), tokens does (a sum of mixed
# units), and the study says so.
"$PFLEX" twin population --jobs 100 --seed 7 --gpus A100,H100,H200,H100-PCIE --mixed-units \
  --out "$tmp/mix.csv" >/dev/null 2>&1 || fail "twin population --mixed-units"
cut -d, -f1-17 "$tmp/mix.csv" | cmp -s - <(cut -d, -f1-17 "$tmp/pop.csv") ||
  fail "--mixed-units changed the jobs"
head -1 "$tmp/mix.csv" | grep -q ',throughput,throughput_sd,tput_unit$' || fail "no unit columns"
for col in throughput tokens_per_s; do
  for ob in tokens progress; do
    "$PFLEX" study "$tmp/mix.csv" --tput-column "$col" --objective "$ob" --json --workloads 10 \
      --scenarios random --model prior --strategies equal,pfi,optimal,oracle --cuts 20,40 \
      >"$tmp/u_${col}_$ob.json" 2>"$tmp/u_${col}_$ob.err" || fail "study --tput-column $col"
  done
done
grep -q "note: the throughput mixes units" "$tmp/u_throughput_tokens.err" ||
  fail "no note on mixed units"
python3 - "$tmp" <<'EOF2' || fail "units"
import json, sys
d = {(c, o): json.load(open(f"{sys.argv[1]}/u_{c}_{o}.json"))
     for c in ("throughput", "tokens_per_s") for o in ("tokens", "progress")}
key = lambda r: (r["strategy"], r["prediction"], r["cut"])
p_mix = {key(r): r["gap_recovered"] for r in d["throughput", "progress"]["results"]}
p_tok = {key(r): r["gap_recovered"] for r in d["tokens_per_s", "progress"]["results"]}
assert p_mix.keys() == p_tok.keys()
for k in p_mix:  # the values are written to 10 digits: equal to rounding
    if p_mix[k] is not None and k[0] != "pfi":  # Eq. 2 weighs by P_max / T_max: unit-bound
        assert abs(p_mix[k] - p_tok[k]) < 1e-4, (k, p_mix[k], p_tok[k])
t_mix = {key(r): r["gap_recovered"] for r in d["throughput", "tokens"]["results"]}
t_tok = {key(r): r["gap_recovered"] for r in d["tokens_per_s", "tokens"]["results"]}
moved = [k for k in t_mix if k[0] == "optimal" and abs(t_mix[k] - t_tok[k]) > 0.02]
assert moved, "tokens did not depend on the units"
EOF2

# allocate --shrink: optimal on curves shrunk toward the equal cut; on the
# measured (true) curves never worse than equal; the JSON says what was
# shrunk; so wide a band that no move is worth it keeps the equal cut.
for z in 0 1; do
  "$PFLEX" allocate "$tmp/pop.csv" --cut 30 --objective progress --shrink "$z" --json \
    >"$tmp/a$z.json" 2>/dev/null || fail "allocate --shrink $z"
done
"$PFLEX" allocate "$tmp/pop.csv" --cut 30 --objective progress --strategy equal --json \
  >"$tmp/aeq.json" 2>/dev/null || fail "allocate equal"
"$PFLEX" allocate "$PFLEX_SOURCE_DIR/examples/jobs.json" --cut 30 --shrink 10 --pfi-sd 0.5 --json \
  >"$tmp/awide.json" 2>/dev/null || fail "allocate --shrink 10"
"$PFLEX" allocate "$PFLEX_SOURCE_DIR/examples/jobs.json" --cut 30 --strategy equal --json \
  >"$tmp/awide_eq.json" 2>/dev/null || fail "allocate equal (jobs.json)"
rc=0
"$PFLEX" allocate "$tmp/pop.csv" --cut 30 --strategy pfi --shrink 1 >/dev/null 2>"$tmp/apfi.err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "shrink applies to --strategy optimal" "$tmp/apfi.err" ||
  fail "--shrink with pfi not refused"
python3 - "$tmp" <<'EOF2' || fail "allocate --shrink"
import json, sys
t = sys.argv[1]
a0, a1, eq = (json.load(open(f"{t}/{n}.json")) for n in ("a0", "a1", "aeq"))
assert "shrink" not in a0 and "anchor_w" not in a0["jobs"][0]
sh = a1["shrink"]
assert sh["z"] == 1 and sh["pfi_sd"] == 0.241 and sh["anchor"] == "equal"
for j, e in zip(a1["jobs"], eq["jobs"]):
    assert abs(j["anchor_w"] - e["power_w"]) < 1e-6 * e["power_w"], (j, e)
    assert 0 < j["shrink_gain"] <= 1 <= j["shrink_loss"]
assert abs(a1["total_w"] - eq["total_w"]) < 1e-6 * eq["total_w"]
assert a1["weighted_tput"] >= eq["weighted_tput"] * (1 - 1e-9)
assert a1["weighted_tput"] <= a0["weighted_tput"] * (1 + 1e-6)
assert sh["jobs_moved"] > 0 and not sh["kept_anchors"]
w, weq = (json.load(open(f"{t}/{n}.json")) for n in ("awide", "awide_eq"))
assert w["shrink"]["kept_anchors"] and w["shrink"]["jobs_moved"] == 0
for j, e in zip(w["jobs"], weq["jobs"]):
    assert j["power_w"] == j["anchor_w"] and abs(j["power_w"] - e["power_w"]) < 1e-9 * e["power_w"]
    assert abs(j["tput"] - e["tput"]) < 1e-9 * e["tput"]
EOF2
echo "study_fair: ok"
