#!/usr/bin/env bash
# bench_sim_scale.sh: pflex-controller on simulated clusters of hosted pflexd
# agents (pflex-controller sim-cluster --agents hosted: every agent a real
# HTTP endpoint on its own loopback port and state directory, all in one host
# process, on the sim backend), at growing sizes, one cut each. Prints one
# line per size from the sim's --json, the CPU the whole run used (the sim,
# its agent host and the controller) and per round of the controller and of
# the agent host, and the load average around it: on a shared machine the
# load says how much of the two cores the run had. gap_drwn and used separate
# the allocation from the budget the feedback used (docs/controller.md).
#
#   bench/bench_sim_scale.sh [BUILD_DIR] [NODES...]    (default: build 50 200 1000)
#   env: CUT (30), DURATION (60 s), WARMUP (15 s), CHURN (300 s), TICK (1 s),
#        SEED (1), FAULTS (none; a list run at every size, e.g.
#        "none agent-kill:10 agent-stall:10 controller-kill:10"; FAULT, one,
#        is the same), EXTRA (more sim-cluster options; faults given there
#        show in the fault column as the sim reports them: KIND@T, "!" when
#        one did not fire), JSON_DIR (keep each run's --json there)
set -euo pipefail
build=${1:-build}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(50 200 1000)
ctl="$build/pflex-controller"
[ -x "$ctl" ] || { echo "error: need $ctl (build first)" >&2; exit 1; }
cut=${CUT:-30} duration=${DURATION:-60} warmup=${WARMUP:-15} churn=${CHURN:-300} tick=${TICK:-1}
seed=${SEED:-1}
read -r -a faults <<<"${FAULTS:-${FAULT:-none}}"
fmt='%-6s %-6s %-18s %8s %8s %6s %8s %8s %7s %8s %8s %6s %9s %9s %9s %9s %9s %8s %s\n'
# shellcheck disable=SC2059
printf "$fmt" nodes gpus fault caps_s compl_s over gap gap_drwn used vs_eq vs_or wrong round_ms \
  alloc_ms alloc_cpu ctl_ms/r host_ms/r cpu_s load
for n in "${sizes[@]}"; do
  for f in "${faults[@]}"; do
    fault=()
    [ "$f" = none ] || fault=(--fault "$f")
    t=$(mktemp)
    load0=$(cut -d' ' -f1 /proc/loadavg)
    # shellcheck disable=SC2086
    if ! out=$(/usr/bin/time -f '%U %S' -o "$t" "$ctl" sim-cluster --agents hosted --nodes "$n" \
      --cut "$cut" --duration "$duration" --warmup "$warmup" --churn "$churn" --tick "$tick" \
      --seed "$seed" --json "${fault[@]}" ${EXTRA:-} 2>/dev/null); then
      echo "$n $f: sim-cluster failed"
      rm -f "$t"
      continue
    fi
    [ -z "${JSON_DIR:-}" ] || { mkdir -p "$JSON_DIR" && echo "$out" > "$JSON_DIR/sim-$n-${f//[:\/]/_}.json"; }
    cpu=$(awk '{printf "%.0f", $1 + $2}' "$t")
    rm -f "$t"
    load1=$(cut -d' ' -f1 /proc/loadavg)
    echo "$out" | jq -r --arg cpu "$cpu" --arg load "$load0-$load1" --arg f "$f" '
      def r3: if . == null then "-" else (. * 1000 | round / 1000 | tostring) end;
      (if (.faults | length) > 0 then
         (.faults | map(.kind + "@" + (.at_s | tostring) + (if .fired then "" else "!" end)) | join(","))
       else $f end) as $fl |
      [.nodes, .gpus, $fl, (.caps_applied_s | r3), (.compliance_s | r3), .overshoot_samples,
       (.gap_recovered | r3), (.gap_recovered_drawn | r3), (.budget_used | r3),
       (.tput_vs_equal | r3), (.tput_vs_oracle | r3),
       (.wrong_limits_after + .wrong_limits_final), (.round_ms_max | r3), (.alloc_ms_max | r3), (.alloc_cpu_ms_max | r3),
       (.controller_cpu_ms_per_round | r3), (.host_cpu_ms_per_round | r3), $cpu, $load] | @tsv' |
      while IFS=$'\t' read -r -a col; do
        # shellcheck disable=SC2059
        printf "$fmt" "${col[@]}"
      done
  done
done
