# pflex-controller sim-cluster with each fault once, in one 20-node event:
# an agent killed with SIGKILL (restarted 7 s later), an agent stalled with
# SIGSTOP (resumed 7 s later), and the controller killed with SIGKILL
# (restarted 7 s later, after its 5 s leases ran out). The cluster must stay
# at or under target + 1% after compliance throughout, and every GPU must be
# back at its default limit after the event.
source "$(dirname "$0")/controller_common.bash"

"$CTL" sim-cluster --nodes 20 --cut 30 --duration 34 --warmup 10 --seed 5 --churn 120 \
  --fault agent-kill:4 --fault agent-stall:12 --fault controller-kill:20 --heal 7 \
  --agents process --pflexd "$PFLEXD" --fake-nvml "$FAKE_LIB" --dir "$T/sim" --json > "$T/out.json" \
  2> "$T/sim.log" || { cat "$T/sim.log"; fail "sim-cluster failed"; }
cat "$T/out.json"
jq -e '[.faults[] | select(.fired and .healed_after_s != null)] | length == 3' "$T/out.json" \
  >/dev/null || fail "not every fault fired and healed"
jq -e '.compliance_s != null and .compliance_s < (5 * $scale)' --argjson scale "$TIME_SCALE" "$T/out.json" >/dev/null || fail "compliance_s"
jq -e '.overshoot_samples == 0' "$T/out.json" >/dev/null || fail "over target + 1% during a fault"
jq -e '.wrong_limits_after == 0 and .wrong_limits_final == 0' "$T/out.json" >/dev/null ||
  fail "GPUs left at a wrong limit"
echo "controller_sim_faults: ok"
