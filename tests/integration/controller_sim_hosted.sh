# pflex-controller sim-cluster --agents hosted at the CI size the issue names:
# 50 nodes (400 GPUs), every pflexd agent in one host process on its own
# loopback port and state directory, on the sim backend (NVML's one-second
# power average and 100 ms limit lag), a 30% cut held 30 s with churn; then
# 20 nodes with each fault once (agent killed, agent stalled, controller
# killed with SIGKILL). Asserts caps acknowledged within a second,
# compliance within 5 s, throughput at least the equal cut's, every GPU back
# at its default limit after the event and after the host released every
# cap at its exit (counted into host.json), and the event's report per job
# class (JSON and figure), no sample over target + 1% after compliance (as
# controller_sim and controller_sim_faults assert; on the default job kinds,
# drawn like `pflex twin population`), and that the controller
# restarted after SIGKILL seeds its jobs with what it had learnt (the store's
# learnt table, written inside each round's transaction), and that seed 5's
# 64-GPU MoE job, which the allocation first leaves its whole draw, gets an
# observation that pins its curve (in the eighth round's tree, before the
# probe of explore.h: confidence 0 all event; since the fourteenth round a job
# whose PFI its telemetry predicted is not probed, and this one is pinned by
# the allocation's own binding caps); and that jobs get their PFI from their
# agents' telemetry through the sim's fitted model.
source "$(dirname "$0")/controller_common.bash"
# PLplot's font stack (the report's figure) keeps one-time allocations.
export LSAN_OPTIONS="suppressions=$(dirname "$0")/lsan-plplot.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# The work directories on tmpfs when there is one (as sim-cluster's default):
# 50 agents' durable restore records fsync'd to a loaded disk slow every cap.
S=$T
if [ -w /dev/shm ]; then
  S=$(mktemp -d -p /dev/shm pflex-ctl-test.XXXXXX)
  trap 'cleanup; rm -rf "$S"' EXIT
fi

check() { # out.json label
  jq -e '.job_kinds == "population"' "$1" >/dev/null || fail "$2: not the default job kinds"
  jq -e '.simulated == true and .caps_applied_s != null and .caps_applied_s < (1 * $scale)' --argjson scale "$TIME_SCALE" "$1" >/dev/null ||
    fail "$2: caps_applied_s"
  jq -e '.compliance_s != null and .compliance_s < (5 * $scale)' --argjson scale "$TIME_SCALE" "$1" >/dev/null || fail "$2: compliance_s"
  jq -e '.wrong_limits_after == 0 and .wrong_limits_final == 0' "$1" >/dev/null ||
    fail "$2: GPUs left at a wrong limit"
  [ -f "$(jq -r .dir "$1")/host.json" ] || fail "$2: the host wrote no host.json"
  echo "$2: overshoot_samples $(jq .overshoot_samples "$1"), max_over_pct $(jq .max_over_pct "$1")"
  jq -e '.overshoot_samples == 0' "$1" >/dev/null || fail "$2: over target + 1% after compliance"
}

"$CTL" sim-cluster --agents hosted --nodes 50 --cut 30 --duration 30 --warmup 10 --seed 3 \
  --churn 120 --tick 0.5 --dir "$S/sim" --keep --json > "$T/out.json" 2> "$T/sim.log" ||
  { cat "$T/sim.log"; fail "sim-cluster failed"; }
cat "$T/out.json"
jq -e '.nodes == 50 and .gpus == 400 and .samples > 50' "$T/out.json" >/dev/null || fail "size"
# The PFI model the sim fits on its templates: jobs that trained uncapped
# before the event get their PFI from the telemetry their agent reports
# (pflexd's GET /v1/jobs "telemetry", the controller's pfi_from).
jq -e '(.model | endswith("/model.json")) and .jobs_pfi_from_telemetry > 0' "$T/out.json" >/dev/null ||
  fail "no job's PFI from its telemetry: $(jq -c '[.model, .status_jobs, .jobs_pfi_from_telemetry]' "$T/out.json")"
# Throughput: not more than the oracle's, and not far below an equal cut's.
# Under this churn a job that starts mid-event starts at the event-safe cap
# (pflexd releases a job's GPUs to the lease's fallback), so the controller
# learns it from a prior; runs measure 0.93-1.07 of the equal cut (docs/
# controller.md). "Never worse than equal" is issue 12's open work: this
# bound guards against a regression, it does not claim that property.
jq -e '.tput_vs_equal >= 0.9 and .tput_vs_oracle <= 1.0' "$T/out.json" >/dev/null ||
  fail "throughput below the equal cut's (or above the oracle's)"
check "$T/out.json" "50 nodes"
for d in "$S"/sim/agent00*; do [ -f "$d/restore.json" ] || fail "no restore records in $d"; done
# The report of the event, per job class: the sim submits every job with its
# kind's class (dense-pt, dense-ft, moe-pt, moe-ft), so the JSON names at
# least two with their held throughput and power, and the figure draws each.
"$CTL" report 1 --state-db "$S/sim/controller.db" --plot "$T/event.svg" > "$T/report.json" ||
  fail "report failed"
jq -e '([.classes[] | select(.class != null)] | length) >= 2 and
  all(.classes[] | select(.class != null); .jobs_max > 0 and .power_w_mean > 0 and
  .held_tput_relative > 0 and .held_tput_relative <= 1.05)' "$T/report.json" >/dev/null ||
  fail "report: classes: $(jq -c .classes "$T/report.json")"
# PLplot's SVG writes text as character references: the figure's words, decoded
python3 -c 'import html, re, sys; t = html.unescape(open(sys.argv[1]).read())
print("\n".join(re.findall(r">([^<>]+)</tspan>", t)))' "$T/event.svg" > "$T/event.txt"
grep -qx 'throughput relative to uncapped, by job class' "$T/event.txt" ||
  fail "report: no per-class panel in the figure"
for c in $(jq -r '.classes[].class | select(. != null)' "$T/report.json"); do
  [ "$(grep -cx -- "$c" "$T/event.txt")" -eq 2 ] || fail "report: class $c not in both legends"
done

"$CTL" sim-cluster --agents hosted --nodes 20 --cut 30 --duration 30 --warmup 10 --seed 5 \
  --churn 120 --fault agent-kill:4 --fault agent-stall:12 --fault controller-kill:20 --heal 7 \
  --dir "$S/simf" --keep --json > "$T/outf.json" 2> "$T/simf.log" ||
  { cat "$T/simf.log"; fail "sim-cluster with faults failed"; }
jq -e '[.faults[] | select(.fired and .healed_after_s != null)] | length == 3' "$T/outf.json" \
  >/dev/null || fail "not every fault fired and healed"
check "$T/outf.json" "faults"
seeded=$(sed -n "s/.* \([0-9]*\) jobs' uncapped draw and throughput from the store.*/\1/p" \
  "$S/simf/controller.log" | tail -n 1)
[ "${seeded:-0}" -gt 0 ] || fail "the controller restarted after SIGKILL kept nothing it had learnt"
conf=$(sqlite3 "$S/simf/controller.db" "SELECT max(a.confidence) FROM allocations a JOIN rounds r
  ON r.id = a.round_id WHERE r.event_id = 1 AND a.job = (SELECT job FROM allocations
  ORDER BY gpus DESC, job LIMIT 1)")
awk -v c="${conf:-0}" 'BEGIN { exit !(c > 0) }' ||
  fail "the largest job (given its whole draw) was never observed under a binding cap: confidence ${conf:-none}"
echo "faults: the restarted controller seeded $seeded jobs from the store"
echo "controller_sim_hosted: ok"
