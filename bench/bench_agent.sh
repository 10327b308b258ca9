#!/usr/bin/env bash
# pflexd's own cost at 10 Hz on 8 GPUs (issue 9: under 0.5% of one core and
# 10 MB resident), on the fake NVML and on the sim backend, with the load a
# node sees in production: the controller renewing the caps once a second
# (PUT /v1/caps) and Prometheus scraping /metrics once a second.
# CPU time is pflexd's own utime+stime from /proc/PID/stat over the measured
# window (start-up excluded); memory is its peak resident set (VmHWM).
# usage: bench/bench_agent.sh [BUILD_DIR] [SECONDS]   (default build, 20)
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
DUR=${2:-20}
PFLEXD="$BUILD/pflexd"
FAKE_LIB="$BUILD/tests/fake-nvml/libnvidia-ml.so.1"
[ -x "$PFLEXD" ] && [ -f "$FAKE_LIB" ] || { echo "error: build pflexd and fake-nvml first" >&2; exit 1; }
T=$(mktemp -d)
PID=""
trap '[ -n "$PID" ] && kill -9 $PID 2>/dev/null; rm -rf "$T"' EXIT
printf 'bench-token-%s\n' "$RANDOM$RANDOM" > "$T/token"
chmod 600 "$T/token"
TOKEN=$(cat "$T/token")
TCK=$(getconf CLK_TCK)

# shellcheck source=../tests/fake-nvml/state.bash
source "$(dirname "$0")/../tests/fake-nvml/state.bash"
fake_state() { fake_nvml_write_state "$T/fake.state" 8 bench; }

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# run NAME OPTIONS...: starts pflexd, measures DUR seconds under load, prints a row.
run() {
  local name=$1
  shift
  rm -rf "$T/state"
  : > "$T/log"
  "$PFLEXD" --listen 127.0.0.1:0 --token-file "$T/token" --state-dir "$T/state" \
    --socket "$T/pflexd.sock" --statsd udp:127.0.0.1:0 --hz 10 "$@" > "$T/log" 2>&1 &
  PID=$!
  for ((i = 0; i < 200; i++)); do grep -q '^note: pflexd' "$T/log" && break; sleep 0.05; done
  local port
  port=$(sed -n 's/^note: listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/log")
  [ -n "$port" ] || { cat "$T/log" >&2; exit 1; }
  local body='{"caps":[{"gpu":0,"watts":450},{"gpu":1,"watts":450},{"gpu":2,"watts":450},{"gpu":3,"watts":450},{"gpu":4,"watts":450},{"gpu":5,"watts":450},{"gpu":6,"watts":450},{"gpu":7,"watts":450}],"lease_s":5}'
  curl -sf -o /dev/null -X PUT -H "Authorization: Bearer $TOKEN" --data-binary "$body" "http://127.0.0.1:$port/v1/caps"
  sleep 1
  local c0 t0 c1 t1
  c0=$(cpu_ticks $PID)
  t0=$(date +%s.%N)
  for ((s = 0; s < DUR; s++)); do
    curl -sf -o /dev/null -X PUT -H "Authorization: Bearer $TOKEN" --data-binary '{"caps":[],"lease_s":5}' "http://127.0.0.1:$port/v1/caps"
    curl -sf -o /dev/null "http://127.0.0.1:$port/metrics"
    sleep 1
  done
  c1=$(cpu_ticks $PID)
  t1=$(date +%s.%N)
  local hwm samples
  hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$PID/status")
  samples=$(curl -s "http://127.0.0.1:$port/metrics" | awk '$1 == "pflex_samples_total" { print $2 }')
  kill -TERM $PID
  wait $PID || true
  PID=""
  awk -v n="$name" -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v tck="$TCK" -v hwm="$hwm" -v s="$samples" \
    'BEGIN { cpu = (c1 - c0) / tck; wall = t1 - t0;
             printf "%-22s %6.1f s wall %7.3f s CPU  %6.3f%% of a core  peak RSS %5.1f MB  %s samples\n",
                    n, wall, cpu, 100 * cpu / wall, hwm / 1024, s }'
}

fake_state
export FAKE_NVML_STATE="$T/fake.state"
run "fake NVML, 8 GPUs" --backend nvml --nvml-library "$FAKE_LIB"
run "sim, 8 GPUs" --backend sim --sim-job gpus=8,clock=real
