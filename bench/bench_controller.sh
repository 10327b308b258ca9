#!/usr/bin/env bash
# bench_controller.sh: pflex-controller on simulated clusters of real pflexd
# agents (pflex-controller sim-cluster, docs/controller.md), at growing sizes,
# without and with each fault, then the compute of one round without HTTP
# (bench_controller). Prints one line per run from the sim's --json.
#
#   bench/bench_controller.sh [BUILD_DIR] [NODES...]     (default: build 20 50 100)
# Needs pflexd: $PFLEXD or BUILD_DIR/pflexd. Each run starts NODES pflexd
# processes; on a 2-core machine 100 nodes is about the most that keeps a
# one-second round.
set -euo pipefail
build=${1:-build}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(20 50 100)
ctl="$build/pflex-controller"
pflexd="${PFLEXD:-$build/pflexd}"
[ -x "$ctl" ] && [ -x "$pflexd" ] || { echo "error: need $ctl and pflexd ($pflexd)" >&2; exit 1; }
duration=${DURATION:-60}
printf '%-6s %-6s %-16s %8s %8s %6s %8s %8s %8s %6s %8s\n' nodes gpus fault caps_s compl_s over \
  gap vs_eq vs_or wrong alloc_ms
for n in "${sizes[@]}"; do
  for fault in none agent-kill:10 agent-stall:10 controller-kill:10; do
    args=()
    [ "$fault" = none ] || args=(--fault "$fault")
    out=$("$ctl" sim-cluster --nodes "$n" --duration "$duration" --warmup 15 --seed 1 \
      --churn 300 --pflexd "$pflexd" --json "${args[@]}" 2>/dev/null) || { echo "$n $fault: failed"; continue; }
    echo "$out" | jq -r --arg f "$fault" '[.nodes, .gpus, $f, (.caps_applied_s // -1),
      (.compliance_s // -1), .overshoot_samples, (.gap_recovered // -1), (.tput_vs_equal // -1),
      (.tput_vs_oracle // -1), (.wrong_limits_after + .wrong_limits_final), .alloc_ms_max] |
      "\(.[0]) \(.[1]) \(.[2]) \(.[3]*1000|round/1000) \(.[4]*1000|round/1000) \(.[5]) \(.[6]*1000|round/1000) \(.[7]*1000|round/1000) \(.[8]*1000|round/1000) \(.[9]) \(.[10]*100|round/100)"' |
      awk '{printf "%-6s %-6s %-16s %8s %8s %6s %8s %8s %8s %6s %8s\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11}'
  done
done
"$build/bench/bench_controller" 125 1000 8000
