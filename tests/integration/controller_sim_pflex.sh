# `pflex sim-cluster` (issue 10's name) is `pflex-controller sim-cluster`:
# the same help, the same refusals with the same exit status, and a run with
# the issue's --json fields; without the controller beside it, a clear error.
source "$(dirname "$0")/controller_common.bash"
: "${PFLEX:?}"

"$PFLEX" sim-cluster --help > "$T/help.pflex" || fail "pflex sim-cluster --help failed"
"$CTL" sim-cluster --help > "$T/help.ctl" || fail "pflex-controller sim-cluster --help failed"
cmp "$T/help.pflex" "$T/help.ctl" || fail "the two helps differ"
grep -q -- '--nodes N' "$T/help.pflex" || fail "help does not list --nodes"
"$PFLEX" help sim-cluster | cmp -s - "$T/help.ctl" || fail "pflex help sim-cluster differs"
"$PFLEX" help | grep -q '^  sim-cluster ' || fail "pflex help does not list sim-cluster"

# Refused before anything starts: a fault after the event's end, a ramp longer
# than the event, ports in the ephemeral range (read from /proc here too).
read -r eph_lo _ < /proc/sys/net/ipv4/ip_local_port_range
for bad in "--nodes 0" "--cut abc" "--fault agent-explode:3" "--agents remote" "stray" \
  "--duration 3 --fault agent-kill:999" "--duration 30 --ramp 40" "--base-port $eph_lo"; do
  # shellcheck disable=SC2086
  rc=0; "$PFLEX" sim-cluster $bad > /dev/null 2> "$T/err.pflex" || rc=$?
  [ "$rc" -eq 2 ] || fail "pflex sim-cluster $bad: exit $rc, not 2"
  # shellcheck disable=SC2086
  "$CTL" sim-cluster $bad > /dev/null 2> "$T/err.ctl" || true
  cmp -s "$T/err.pflex" "$T/err.ctl" || fail "pflex sim-cluster $bad: another message"
  grep -q '^error: ' "$T/err.pflex" || fail "pflex sim-cluster $bad: no error line"
done

rc=0; PFLEX_CONTROLLER="$T/no-such-controller" "$PFLEX" sim-cluster --nodes 2 2> "$T/err" || rc=$?
[ "$rc" -eq 1 ] || fail "missing controller: exit $rc, not 1"
grep -q "cannot run '$T/no-such-controller'" "$T/err" || fail "missing controller: $(cat "$T/err")"

# A controller that exits before the event (here: a templates file that does
# not exist) fails the run at once, with the controller's own error, not an
# HTTP timeout after the warm-up.
rc=0; timeout 60 "$PFLEX" sim-cluster --nodes 2 --warmup 20 --templates "$T/nosuch.csv" \
  > /dev/null 2> "$T/err" || rc=$?
[ "$rc" -eq 1 ] || fail "controller that exits: exit $rc, not 1"
grep -q "the controller exited before the event" "$T/err" || fail "controller that exits: $(cat "$T/err")"
grep -q "nosuch.csv" "$T/err" || fail "controller that exits: its error not shown: $(cat "$T/err")"

"$PFLEX" sim-cluster --nodes 4 --cut 30 --duration 8 --warmup 5 --seed 2 --churn 0 --tick 0.5 \
  --json > "$T/out.json" 2> "$T/sim.log" || { cat "$T/sim.log"; fail "pflex sim-cluster failed"; }
cat "$T/out.json"
# (gap_recovered is null when the oracle is no better than the equal cut, as
# with a single job on 4 nodes: there is no gap to recover.)
jq -e '.simulated == true and .nodes == 4 and .gpus == 32 and (.target_w | type) == "number"
       and (.caps_applied_s | type) == "number" and (.compliance_s | type) == "number"
       and (.overshoot_samples | type) == "number" and has("gap_recovered")
       and .wrong_limits_after == 0 and .wrong_limits_final == 0 and (.faults | type) == "array"' \
  "$T/out.json" > /dev/null || fail "the issue's --json fields"
# The allocation's time, wall clock and CPU: both measured, CPU not above wall.
jq -e '(.alloc_ms_max | type) == "number" and (.alloc_cpu_ms_max | type) == "number"
       and .alloc_cpu_ms_max <= .alloc_ms_max + 0.05' "$T/out.json" > /dev/null ||
  fail "allocation times: $(jq -c '{alloc_ms_max, alloc_cpu_ms_max}' "$T/out.json")"
# By default the job kinds are drawn like `pflex twin population --jobs 100`;
# --population 0 runs the paper's published groups instead: the run says so,
# holds the target and leaves no GPU at a wrong limit.
jq -e '.job_kinds == "population" and .population == 100 and .overshoot_samples == 0' \
  "$T/out.json" > /dev/null ||
  fail "default job kinds: $(jq -c '{job_kinds, population, overshoot_samples}' "$T/out.json")"
"$PFLEX" sim-cluster --nodes 4 --cut 30 --duration 8 --warmup 5 --seed 3 --churn 0 --tick 0.5 \
  --population 0 --json > "$T/pop.json" 2> "$T/pop.log" || { cat "$T/pop.log"; fail "--population 0 failed"; }
jq -e '.job_kinds == "paper" and .population == 0 and .overshoot_samples == 0
       and .wrong_limits_after == 0 and .wrong_limits_final == 0' "$T/pop.json" > /dev/null ||
  fail "--population 0: $(jq -c '{job_kinds, population, overshoot_samples, wrong_limits_after}' "$T/pop.json")"
rc=0; "$PFLEX" sim-cluster --population x > /dev/null 2> "$T/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q -- '--population' "$T/err" || fail "--population x: exit $rc: $(cat "$T/err")"
# The plain output names the same quantities, the samples scored and each
# fault. An agent stalled for 6 of the 8 s does not slow the sim's ticks (0.2
# s: about 40 samples; when the sim still read the stalled agent, each tick
# waited 0.8 s for it: about 18).
"$PFLEX" sim-cluster --nodes 2 --duration 8 --warmup 3 --churn 0 \
  --fault agent-stall:1:6 > "$T/out.txt" 2>/dev/null || fail "pflex sim-cluster (text) failed"
grep -q '^compliance_s ' "$T/out.txt" &&
  grep -q '^fault agent-stall  *at 1s: fired, healed after' "$T/out.txt" || fail "text output: $(cat "$T/out.txt")"
samples=$(awk '$1 == "samples" {print $2}' "$T/out.txt")
[ "${samples:-0}" -ge 30 ] || fail "$samples samples in 8 s at 0.2 s ticks with a stalled agent: $(cat "$T/out.txt")"
echo "controller_sim_pflex: ok"
