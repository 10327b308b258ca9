# pflex sweep on the sim backend: the paper's whole protocol (6 caps x 30 min,
# 60 s pauses, 1 Hz) for a twin job in virtual time, through the same command
# and engine as real GPUs. The PFI it prints is the twin job's: within 0.015 of
# the published 1.30 of "Dense PT H200x8 Qwen3-32B no-compile" (Table 6) -- the
# twin job is calibrated to within 0.01 of that value, and the sweep's own
# noise SD is about 0.002 (its printed 95% CI is +-0.004), so 0.01 + 2.5 SD.
# The CI it prints must also be that narrow and contain its PFI.
source "$(dirname "$0")/nvml_common.bash"
unset PFLEX_STATE_DIR   # the sim backend keeps its records in memory
cd "$T"
start=$(date +%s)
"$PFLEX" sweep --backend sim --sim-job "group=Dense PT H200x8 Qwen3-32B no-compile,seed=3" \
  --gpus 0-7 --caps 200:700:100 --group qwen32-sim --out sim.csv > out.txt 2> err.txt || { cat err.txt; fail "sim sweep"; }
end=$(date +%s)
cat out.txt
[ $((end - start)) -le 20 ] || fail "a virtual-time sweep took $((end - start)) s"
grep >/dev/null "note: sim backend: simulated GPUs and job, modelled readings" err.txt || fail "simulation not said"
grep >/dev/null "restored 8 GPUs to their original limits" err.txt || fail "restore"
grep >/dev/null "^provenance: simulated" out.txt || fail "sweep: no provenance line"
pfi=$(sed -n 's/^PFI \([0-9.]*\) .*/\1/p' out.txt)
ci=$(sed -n 's/^PFI .*95% CI \([0-9.]*\)-\([0-9.]*\);.*/\1 \2/p' out.txt)
python3 - "$pfi" $ci <<'PY'
import csv, sys
pfi, lo, hi = map(float, sys.argv[1:4])
assert abs(pfi - 1.30) <= 0.015, pfi
assert lo <= pfi <= hi and hi - lo < 0.02, (lo, pfi, hi)
rows = list(csv.DictReader(open("sim.csv")))
assert [int(r["cap_w"]) for r in rows] == [200, 300, 400, 500, 600, 700], rows
assert all(r["provenance"] == "simulated" and r["gpu"] == "H200" and r["gpus"] == "8" for r in rows)
p = [float(r["power_w"]) for r in rows]
t = [float(r["tokens_per_s"]) for r in rows]
# power and throughput rise with the cap; 8 GPUs never exceed 8 x cap (+0.5% noise)
assert all(a < b for a, b in zip(p, p[1:])) and all(a < b for a, b in zip(t, t[1:])), (p, t)
assert all(pw <= 8 * int(r["cap_w"]) * 1.005 for pw, r in zip(p, rows)), p
PY
# --db: the runs go to the store too; the same group again is refused.
"$PFLEX" sweep --backend sim --caps 300,700 --group simdb --out db.csv --db "$T/s.db" --quiet >/dev/null 2>err.txt \
  || { cat err.txt; fail "sweep --db"; }
grep >/dev/null "stored 2 runs in '$T/s.db'" err.txt || fail "store not reported"
"$PFLEX" export --db "$T/s.db" --group simdb 2>/dev/null | python3 -c '
import csv, sys
rows = list(csv.DictReader(sys.stdin))
assert [r["cap_w"] for r in rows] == ["300", "700"] and rows[0]["provenance"] == "simulated", rows'
set +e
"$PFLEX" sweep --backend sim --caps 300,700 --group simdb --out db2.csv --db "$T/s.db" --quiet >/dev/null 2>err.txt; rc=$?
set -e
expect_eq "$rc" 1 "a group already stored"
grep >/dev/null "group 'simdb' is already stored" err.txt || fail "duplicate group message"

# pflex gpus and cap on the sim backend
"$PFLEX" gpus --backend sim --sim-job gpus=2 | grep >/dev/null "simulated" || fail "gpus on sim"
"$PFLEX" cap set --backend sim --sim-job gpus=2 --gpus 1 --watts 400 2>"$T/capset.err" | grep >/dev/null "GPU 1: power limit 700.0 W -> 400.0 W" || fail "cap set on sim"
grep -q "note: simulated GPUs live in this process only" "$T/capset.err" || fail "cap set on sim: no note that the limits end with the process: $(cat "$T/capset.err")"
# a virtual clock cannot run a real command
set +e
"$PFLEX" sweep --backend sim --caps 300,700 -- true 2>/dev/null; rc=$?
set -e
expect_eq "$rc" 2 "virtual clock with a command"
# a throughput regex needs a command whose output it reads
set +e
"$PFLEX" sweep --backend sim --caps 300,700 --tput-regex 'tok=([0-9]+)' 2>/dev/null; rc=$?
set -e
expect_eq "$rc" 2 "--tput-regex without a command"
echo "sweep_sim: ok"
