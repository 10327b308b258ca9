# pflex-controller sim-cluster --agents process at a CI size: 20 nodes (160 GPUs) of real
# pflexd agents on loopback, a 30% cut held 25 s with job churn. Asserts what
# the run must show: caps acknowledged within a second, compliance within
# 5 s and no sample over target + 1% after it, throughput at least the equal
# cut's, and every GPU back at its default limit after the event.
source "$(dirname "$0")/controller_common.bash"

"$CTL" sim-cluster --nodes 20 --gpus-per-node 8 --cut 30 --duration 25 --warmup 10 --seed 3 \
  --churn 120 --agents process --pflexd "$PFLEXD" --fake-nvml "$FAKE_LIB" --dir "$T/sim" --json > "$T/out.json" \
  2> "$T/sim.log" || { cat "$T/sim.log"; fail "sim-cluster failed"; }
cat "$T/out.json"
jq -e '.simulated == true and .nodes == 20 and .gpus == 160' "$T/out.json" >/dev/null || fail "size"
jq -e '.caps_applied_s != null and .caps_applied_s < (1 * $scale)' --argjson scale "$TIME_SCALE" "$T/out.json" >/dev/null || fail "caps_applied_s"
jq -e '.compliance_s != null and .compliance_s < (5 * $scale)' --argjson scale "$TIME_SCALE" "$T/out.json" >/dev/null || fail "compliance_s"
jq -e '.overshoot_samples == 0' "$T/out.json" >/dev/null || fail "overshoot after compliance"
jq -e '.samples > 100' "$T/out.json" >/dev/null || fail "too few power samples"
# Throughput: not more than the oracle's, and not far below an equal cut's.
# Under this churn a job that starts mid-event starts at the event-safe cap
# (pflexd releases a job's GPUs to the lease's fallback), so the controller
# learns it from a prior; runs measure 0.93-1.07 of the equal cut (docs/
# controller.md). "Never worse than equal" is issue 12's open work: this
# bound guards against a regression, it does not claim that property.
jq -e '.tput_vs_equal >= 0.9 and .tput_vs_oracle <= 1.0' "$T/out.json" >/dev/null ||
  fail "throughput below the equal cut's (or above the oracle's)"
jq -e '.wrong_limits_after == 0 and .wrong_limits_final == 0' "$T/out.json" >/dev/null ||
  fail "GPUs left at a wrong limit"
echo "controller_sim: ok"
