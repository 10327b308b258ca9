#!/usr/bin/env bash
# Read-only check of the nvml backend on a real NVIDIA GPU (issue 5, item 5).
#
# It NEVER changes a power limit, clock or any other setting: it only runs
# `pflex gpus` (table and JSON) and `pflex gpus --watch` (30 s of readings at
# 2 Hz, the last 10 s of them with --profiling: NVML's GPM counters, read
# only) while a small matrix-multiply load runs, and then checks that every
# GPU's power limit is what it was before. Not a CTest test (tests/device/ is
# not globbed): run it by hand on a machine with a GPU:
#
#   cmake -S . -B build && cmake --build build -j2 --target pflex-cli
#   bash tests/device/read_only_check.sh [build/pflex] [OUTDIR]
#
# Results (tables, JSON, the series CSV, a summary) go to OUTDIR (default
# $OUT if set, else ./device-check). The load is PyTorch or CuPy when one is
# installed (a 4096x4096 matmul loop on GPU 0 for about 30 s); without either
# the readings are taken at idle and the summary says so.
# Dry run without a GPU: DEVICE_CHECK_FAKE=build/tests/fake-nvml/libnvidia-ml.so.1
# FAKE_NVML_STATE=... SECONDS_LOAD=2 bash tests/device/read_only_check.sh
set -uo pipefail
PFLEX=${1:-build/pflex}
OUTDIR=${2:-${OUT:-./device-check}}
SECONDS_LOAD=${SECONDS_LOAD:-30}
mkdir -p "$OUTDIR"
unset PFLEX_NVML_LIB PFLEX_GPU_BACKEND   # the real driver, never the fake...
# ...except for a dry run of this script itself: DEVICE_CHECK_FAKE=path/libnvidia-ml.so.1
[ -n "${DEVICE_CHECK_FAKE:-}" ] && export PFLEX_NVML_LIB="$DEVICE_CHECK_FAKE"
S="$OUTDIR/summary.txt"
: > "$S"
say() { echo "$*" | tee -a "$S"; }

say "== device read-only check: $(date -u +%FT%TZ) on $(hostname)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,power.limit,power.draw --format=csv \
  > "$OUTDIR/nvidia-smi-before.csv" 2>&1
"$PFLEX" gpus > "$OUTDIR/gpus.txt" 2>&1; rc=$?
cat "$OUTDIR/gpus.txt" | tee -a "$S"
[ $rc = 0 ] || { say "FAIL: pflex gpus exit $rc"; exit 1; }
"$PFLEX" gpus --json > "$OUTDIR/gpus-before.json" 2>"$OUTDIR/gpus-json.err" || { say "FAIL: pflex gpus --json"; exit 1; }

# A small load on GPU 0 so the readings move: PyTorch, else CuPy, else none.
LOAD=none
cat > "$OUTDIR/load.py" <<'PY'
import sys, time
secs = float(sys.argv[1])
try:
    import torch
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16); b = torch.randn_like(a)
    sync = torch.cuda.synchronize; mm = lambda: a @ b; lib = "torch"
except Exception:
    import cupy
    a = cupy.random.rand(4096, 4096, dtype=cupy.float32); b = cupy.random.rand(4096, 4096, dtype=cupy.float32)
    sync = cupy.cuda.Device().synchronize; mm = lambda: a @ b; lib = "cupy"
print("load:", lib, flush=True)
t0 = time.time(); n = 0
while time.time() - t0 < secs:
    mm(); n += 1
    if n % 50 == 0: sync()
sync()
print("matmuls:", n, flush=True)
PY
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null || python3 -c "import cupy" 2>/dev/null; then
  python3 "$OUTDIR/load.py" "$SECONDS_LOAD" > "$OUTDIR/load.log" 2>&1 &
  LOADPID=$!
  LOAD=matmul
  sleep 2
fi
say "load: $LOAD"
GPM_SECONDS=$((SECONDS_LOAD / 3))
"$PFLEX" gpus --watch "$((SECONDS_LOAD - GPM_SECONDS))" --hz 2 > "$OUTDIR/series.csv" 2>"$OUTDIR/watch.err"; rc=$?
# GPM's profiling activities (sm_active, pipe_tensor_active, dram_active;
# Hopper and newer): sampling reads counters, it sets nothing.
"$PFLEX" gpus --watch "$GPM_SECONDS" --hz 2 --profiling > "$OUTDIR/series_gpm.csv" 2>"$OUTDIR/watch_gpm.err"; rc_gpm=$?
[ $rc_gpm = 0 ] || say "note: pflex gpus --watch --profiling exit $rc_gpm: $(cat "$OUTDIR/watch_gpm.err")"
[ -n "${LOADPID:-}" ] && wait "$LOADPID"
[ -f "$OUTDIR/load.log" ] && cat "$OUTDIR/load.log" | tee -a "$S"
[ $rc = 0 ] || { say "FAIL: pflex gpus --watch exit $rc: $(cat "$OUTDIR/watch.err")"; }
"$PFLEX" gpus --json > "$OUTDIR/gpus-after.json" 2>/dev/null
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,power.limit,power.draw --format=csv \
  > "$OUTDIR/nvidia-smi-after.csv" 2>&1

python3 - "$OUTDIR" <<'PY' | tee -a "$S"
import csv, json, sys, statistics as st
d = sys.argv[1]
before = json.load(open(f"{d}/gpus-before.json")); after = json.load(open(f"{d}/gpus-after.json"))
ok = True
for b, a in zip(before, after):
    if b.get("limit_w") != a.get("limit_w"):
        ok = False; print(f"FAIL: GPU {b['index']} limit changed {b.get('limit_w')} -> {a.get('limit_w')}")
print("limits unchanged:", ok)
print("readings available on GPU 0:", sorted(k for k in before[0] if k not in ("index", "name", "uuid")))
rows = list(csv.DictReader(open(f"{d}/series.csv")))
for g in sorted({r["gpu"] for r in rows}, key=int):
    rs = [r for r in rows if r["gpu"] == g]
    def col(k):
        return [float(r[k]) for r in rs if r[k] != ""]
    p, u, sm = col("power_w"), col("gpu_util"), col("sm_clock_mhz")
    e = col("energy_j")
    line = f"GPU {g}: {len(rs)} samples"
    if p: line += f", power {min(p):.1f}-{max(p):.1f} W (mean {st.mean(p):.1f})"
    if u: line += f", util max {max(u):.0f}%"
    if sm: line += f", SM clock {min(sm):.0f}-{max(sm):.0f} MHz"
    if len(e) > 1 and rs:
        dt = float(rs[-1]["time_s"]) - float(rs[0]["time_s"])
        if dt > 0: line += f", energy counter mean {(e[-1]-e[0])/dt:.1f} W"
    print(line)
try:
    gpm = list(csv.DictReader(open(f"{d}/series_gpm.csv")))
except OSError:
    gpm = []
for g in sorted({r["gpu"] for r in gpm}, key=int):
    rs = [r for r in gpm if r["gpu"] == g and r["dram_active"] != ""]
    if not rs:
        print(f"GPU {g}: GPM: no profiling activities (GPU without GPM, or not permitted)")
        continue
    m = lambda k: st.mean(float(r[k]) for r in rs)
    print(f"GPU {g}: GPM over {len(rs)} samples: sm_active {m('sm_active'):.3f}, "
          f"pipe_tensor_active {m('pipe_tensor_active'):.3f}, dram_active {m('dram_active'):.3f}")
sys.exit(0 if ok else 1)
PY
rc=$?
say "result: $([ $rc = 0 ] && echo PASS || echo FAIL) (read-only: no limit, clock or setting was changed by this script)"
exit $rc
