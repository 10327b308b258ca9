# A short real-time sweep against the fake NVML: caps set and verified, one
# fresh command per run, throughput from the command's output (regex) and from
# StatsD (Unix socket), runs CSV, PFI, and every limit back at the end.
source "$(dirname "$0")/nvml_common.bash"
fake_state 2
export FAKE_NVML_RESTORE_CHECK="$PFLEX_STATE_DIR/restore.json"
cd "$T"

# The command prints a throughput that depends on the cap it was started
# under (PFLEX_CAP_W, set by pflex): 2 tokens/s per W. It also records the
# limit it saw, proving the cap was set before it started.
cat > job.sh <<'EOS'
#!/bin/sh
echo "$PFLEX_CAP_W $(grep '^gpu0.limit_mw=' "$FAKE_NVML_STATE" | tail -n1 | cut -d= -f2)" >> started.txt
while true; do echo "step 1 | loss 2.0 | tokens_per_second: $((PFLEX_CAP_W * 2))"; sleep 0.05; done
EOS
chmod +x job.sh
"$PFLEX" sweep --gpus 0,1 --caps 300:700:200 --hz 10 --duration 0.8 --pause 0.1 --sustain 0.2 \
  --group fake-regex --out runs.csv --quiet -- ./job.sh > out.txt 2> err.txt || { cat err.txt; fail "sweep failed"; }
cat out.txt
# Each run started fresh, after its cap was in place.
expect_eq "$(cat started.txt | tr '\n' ' ')" "300 300000 500 500000 700 700000 " "runs started under their caps"
# Fake power is min(650 W, cap) per GPU, two GPUs: 600, 1000, 1300 W.
# Throughput 2/W x cap: 600, 1000, 1400. PFI_i = (1-P/1300)/(1-T/1400):
# 300 W: (700/1300)/(800/1400) = 0.942; 500 W: (300/1300)/(400/1400) = 0.808; mean 0.875.
python3 - <<'PY'
import csv
rows = list(csv.DictReader(open("runs.csv")))
assert [r["cap_w"] for r in rows] == ["300", "500", "700"], rows
assert [float(r["power_w"]) for r in rows] == [600, 1000, 1300], rows
assert [float(r["tokens_per_s"]) for r in rows] == [600, 1000, 1400], rows
assert all(r["group"] == "fake-regex" and r["gpu"] == "H200" and r["gpus"] == "2" for r in rows), rows
assert all(r["provenance"] == "measured" and float(r["gpu_util"]) == 97 for r in rows), rows
# NVML's memory utilization under its DCGM name (a model's feature); no
# profiling activities without --profiling.
assert all(float(r["mem_copy_util"]) == 61 for r in rows), rows
assert all(not r.get("dram_active") for r in rows), rows
PY
grep >/dev/null "^PFI 0.875 " out.txt || fail "PFI line"
grep >/dev/null "^provenance: measured" out.txt || fail "sweep: no provenance line"
grep >/dev/null "restored 2 GPUs to their original limits" err.txt || fail "restore not reported"
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 restored"
expect_eq "$(fake_get gpu1.limit_mw)" 700000 "GPU 1 restored"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["records"] == []' "$PFLEX_STATE_DIR/restore.json"
[ -z "$(fake_get gpu0.violation)$(fake_get gpu1.violation)" ] || fail "limit changed before its record"

# --profiling: NVML's GPM activities (the fake's percents) as fractions in the runs.
for g in 0 1; do fake_set gpu$g.gpm_sm 88; fake_set gpu$g.gpm_tensor 41; fake_set gpu$g.gpm_dram 55; done
"$PFLEX" sweep --gpus 0,1 --caps 300,700 --hz 10 --duration 0.8 --pause 0.1 --sustain 0.2 --profiling \
  --group fake-gpm --out runs_gpm.csv --quiet -- ./job.sh > out_gpm.txt 2> err_gpm.txt || { cat err_gpm.txt; fail "sweep --profiling failed"; }
python3 - <<'PY'
import csv
rows = list(csv.DictReader(open("runs_gpm.csv")))
assert len(rows) == 2, rows
for r in rows:
    assert abs(float(r["sm_active"]) - 0.88) < 1e-9 and abs(float(r["pipe_tensor_active"]) - 0.41) < 1e-9, r
    assert abs(float(r["dram_active"]) - 0.55) < 1e-9 and float(r["mem_copy_util"]) == 61, r
PY
expect_eq "$(fake_get gpu0.limit_mw),$(fake_get gpu1.limit_mw)" 700000,700000 "GPUs restored after the --profiling sweep"

# StatsD: the job sends a tokens counter over a Unix datagram socket.
cat > statsd_job.py <<'EOS'
import os, socket, time
addr = os.environ["PFLEX_STATSD"]
assert addr.startswith("unix:"), addr
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
rate = 3 * int(os.environ["PFLEX_CAP_W"])   # tokens/s
# Tokens for the time that really passed, so a late wake-up on a loaded
# machine does not change the rate (a fixed count per sleep would).
last, owed = time.monotonic(), 0.0
while True:
    time.sleep(0.05)
    now = time.monotonic()
    owed += rate * (now - last)
    last = now
    n = int(owed)
    owed -= n
    s.sendto(b"tokens:%d|c" % n, addr[5:])
EOS
# 2 s a run: python3 alone can take a second to start on a loaded machine
# (seen under ASan with -j2), and the training phase needs samples.
"$PFLEX" sweep --gpus 0 --caps 400,700 --hz 10 --duration 2 --pause 0 --sustain 0.2 \
  --statsd "unix:$T/statsd.sock" --group fake-statsd --out runs2.csv --quiet -- python3 statsd_job.py > out2.txt 2> err2.txt \
  || { cat err2.txt; fail "statsd sweep failed"; }
cat out2.txt
# 3 tokens/s per W: 1200 and 2100 tokens/s, within the timing jitter of a
# 50 ms sender (a rate measured over sub-second windows): 10%.
python3 - <<'PY'
import csv
rows = list(csv.DictReader(open("runs2.csv")))
assert len(rows) == 2, rows
for r, want in zip(rows, (1200, 2100)):
    t = float(r["tokens_per_s"])
    assert abs(t / want - 1) < 0.10, (r["cap_w"], t, want)
PY
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 restored after the StatsD sweep"

# --attach: a job already running (started here, not by pflex) that reports
# over UDP StatsD; pflex only changes caps and measures. Its rate follows the
# GPU 0 limit it reads from the fake's state: 2 tokens/s per W.
port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > attached.py <<'EOS'
import os, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
state = os.environ["FAKE_NVML_STATE"]
last, owed = time.monotonic(), 0.0
while True:
    time.sleep(0.05)
    lim = [l for l in open(state) if l.startswith("gpu0.limit_mw=")][-1]
    rate = 2 * int(lim.split("=")[1]) // 1000
    now = time.monotonic()
    owed += rate * (now - last)   # tokens for the time that really passed
    last = now
    n = int(owed)
    owed -= n
    s.sendto(b"tokens:%d|c" % n, ("127.0.0.1", int(sys.argv[1])))
EOS
python3 attached.py $port &
JOB=$!
"$PFLEX" sweep --gpus 0 --caps 300,700 --hz 10 --duration 1 --pause 0 --sustain 0.2 --attach \
  --statsd udp://127.0.0.1:$port --group attached --out runs3.csv --quiet > out3.txt 2> err3.txt \
  || { kill $JOB; cat err3.txt; fail "attached sweep"; }
kill -0 $JOB || fail "the attached job was stopped by pflex"
kill $JOB
cat out3.txt
python3 - <<'PY'
import csv
rows = list(csv.DictReader(open("runs3.csv")))
assert len(rows) == 2, rows
for r, want in zip(rows, (600, 1400)):
    assert abs(float(r["tokens_per_s"]) / want - 1) < 0.15, (r["cap_w"], r["tokens_per_s"], want)
PY
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 restored after the attached sweep"

# Caps outside the range are refused before anything changes.
set +e
"$PFLEX" sweep --gpus 0 --caps 100,700 --duration 0.1 --out runs4.csv --quiet -- true 2> err4.txt; rc=$?
set -e
expect_eq "$rc" 1 "out-of-range sweep"
grep >/dev/null "cap 100.0 W is outside the settable range 200.0-700.0 W of GPU 0; nothing changed" err4.txt || fail "range message"
echo "sweep_fake: ok"
