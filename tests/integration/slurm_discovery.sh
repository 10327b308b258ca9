#!/usr/bin/env bash
# Issue 11, item 2: pflex-controller with NO agents file finds its agents in
# the real Slurm of scripts/slurm-testbed.sh (inventory = slurm: sinfo --json
# and squeue --json, polled every second). pflexd on the fake NVML (4 GPUs at
# 650 W, limits 200-700 W) and pflex_spank.so as in slurm_event.sh.
#
#  1. The controller discovers the node (its agent at {addr}:PORT) and the
#     two running sbatch jobs (rigid and flex50), registered through pflexd.
#  2. A 30% event caps the flex50 job's GPUs more than the rigid one's, each
#     within its floor, the cluster compliant.
#  3. squeue failing (a wrapper exits 1) keeps the last good inventory: the
#     node stays, its caps hold, the failure shows in /v1/status and
#     /metrics; when squeue works again, so does the discovery.
#  4. slurmd killed (-9) and restarted mid-event: the jobs run on, capped.
#     Then the flex50 job is killed with scancel, the rigid one ends by
#     itself, both mid-event; the discovery stops listing them.
#  5. The node leaves the Slurm inventory mid-event (the wrapper hides its
#     GPUs and lists another GPU node, one without an agent): it stays an
#     agent, departed, its GPUs still capped; the event's end lifts its caps
#     and only then is it dropped. Every GPU is at its original limit.
#  6. Listed again, it is an agent again.
# Every wait is bounded; the EXIT trap stops Slurm, pflexd and the controller.
source "$(dirname "$0")/slurm_common.bash"

start_pflexd --hz 5
start_bed timeout_ms=2000

# sinfo and squeue as the controller runs them: Slurm's own, unless the test
# makes squeue fail ($T/fail) or hides the node ($T/hide).
mkdir -p "$T/bin"
cat > "$T/bin/squeue" <<EOF
#!/bin/sh
if [ -e "$T/fail" ]; then
  echo "squeue: error: slurm_load_jobs error: Unable to contact slurm controller (connect failure)" >&2
  exit 1
fi
exec /usr/bin/squeue "\$@"
EOF
cat > "$T/bin/sinfo" <<EOF
#!/bin/sh
[ -e "$T/hide" ] || exec /usr/bin/sinfo "\$@"
/usr/bin/sinfo "\$@" | jq '.nodes[0].gres = "" | .nodes += [.nodes[0] + {name: "ghost", address: "127.0.0.2", gres: "gpu:4"}]'
EOF
chmod 755 "$T/bin/sinfo" "$T/bin/squeue"

# No agents file: the one given does not exist and must not be needed.
start_controller --inventory slurm --agents-file "$T/no-such-agents-file" --slurm-bin-dir "$T/bin" \
  --agent-url-template "http://{addr}:$PORT" --slurm-poll-s 1 --slurm-timeout-s 20
status() { curl -sf "$C/v1/status"; }
# until SECONDS JQ-FILTER: waits until the status satisfies the filter.
until_status() {
  local i
  for ((i = 0; i < $1 * 10; i++)); do
    status | jq -e "$2" > /dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "status never satisfied '$2' within $1 s: $(status | jq -c '{nodes, unreachable, discovery}')"
}

# 1. The node and its agent, from Slurm alone.
NODE=$(hostname -s)
AGENT="http://127.0.0.1:$PORT"
until_status 10 '.nodes == 1 and .unreachable == 0 and .discovery.source == "slurm"
  and .discovery.ok and .discovery.agents == 1'
status | jq -e --arg n "$NODE" --arg a "http://127.0.0.1:$PORT" \
  '.discovery.slurm_nodes == [{name: $n, state: "idle", drain: false, agent: $a}]' > /dev/null ||
  fail "the discovered node: $(status | jq -c .discovery.slurm_nodes)"

submit_rigid_flex
# Slurm lists both jobs on the node; pflexd registered them with their classes.
jobs_seen=".discovery.jobs | map(select(.id == \"$rigid\" or .id == \"$flex\"))
  | length == 2 and all(.nodes == [\"$NODE\"] and .gpus and .registered)"
until_status 10 "$jobs_seen"
until_status 10 "[.jobs[] | select(.id == \"$rigid\" or .id == \"$flex\") | [.id, .class]] | sort
  == ([[\"$rigid\", \"rigid\"], [\"$flex\", \"flex50\"]] | sort)"
status | jq -e '.discovery.unregistered == []' > /dev/null || fail "unregistered jobs: $(status | jq -c .discovery)"
sleep 2

# 2. A 30% cut of the measured 2600 W.
id=$(curl -sf -X POST "$C/v1/events" -H "$AUTH" -d '{"cut_pct":30,"start":"now","duration_s":300}' | jq -e '.id') ||
  fail "POST /v1/events refused"
wait_flex_capped_more 15
check_floors

# 3. squeue fails: the last good inventory stays, and says so.
touch "$T/fail"
until_status 10 '.discovery.ok == false and (.discovery.error | test("squeue --json: exit status 1: squeue: error: slurm_load_jobs error"))'
status | jq -e --arg a "$AGENT" '.nodes == 1 and .unreachable == 0 and .discovery.agents == 1
  and (.discovery.jobs | length) >= 2' > /dev/null || fail "the inventory changed on a failed poll: $(status | jq -c .discovery)"
metrics=$(curl -sf "$C/metrics")
grep -qx 'pflex_controller_discovery_ok 0' <<< "$metrics" || fail "metrics: discovery_ok not 0"
grep -Eq '^pflex_controller_discovery_failures_total [1-9]' <<< "$metrics" || fail "metrics: no failure counted"
grep -q 'discovery from Slurm failed (keeping the last good inventory): squeue --json: exit status 1' "$T/ctl.log" ||
  fail "the failure is not logged: $(tail -n 5 "$T/ctl.log")"
flex_capped_more || fail "the caps did not hold while squeue failed"
rm -f "$T/fail"
until_status 10 '.discovery.ok and .discovery.error == null'
grep -qx 'pflex_controller_discovery_ok 1' <<< "$(curl -sf "$C/metrics")" || fail "metrics: discovery_ok not 1 again"

# 4. slurmd killed (-9) and restarted mid-event: the jobs live on, still
# capped; then the flex50 job is killed with scancel and the rigid one ends
# by itself, both mid-event.
bash "$TESTBED" restart-slurmd --dir "$BED" --signal KILL
expect_eq "$(job_state "$rigid")" RUNNING "rigid job after slurmd restarted"
expect_eq "$(job_state "$flex")" RUNNING "flex50 job after slurmd restarted"
until_status 10 '.discovery.ok and .unreachable == 0'
flex_capped_more || wait_flex_capped_more 5
scancel "$flex"
release "$rigid"
wait_ended "$flex" 30
wait_ended "$rigid" 30
expect_eq "$(job_state "$flex")" CANCELLED "flex50 job after scancel"
until_status 10 ".discovery.jobs | map(select(.id == \"$rigid\" or .id == \"$flex\")) | length == 0"

# 5. The node leaves Slurm's list mid-event: kept, departed, still capped.
touch "$T/hide"
until_status 10 '.discovery.departed == ["'"$AGENT"'"] and .nodes == 2'
status | jq -e '.discovery.agents == 1 and (.discovery.slurm_nodes | map(select(.name == "ghost")) | length == 1)' > /dev/null ||
  fail "the hidden node's replacement: $(status | jq -c .discovery)"
low=0
for g in 0 1 2 3; do [ "$(limit "$g")" -lt "$ORIG_MW" ] && low=$((low + 1)); done
[ "$low" -gt 0 ] || fail "no GPU is capped any more while the departed node's event runs"
grep -q "agent '$AGENT' left the Slurm inventory; kept until its GPUs are known restored" "$T/ctl.log" ||
  fail "the departure is not logged"
# The event ends: its caps are lifted, then it is dropped.
curl -sf -X DELETE "$C/v1/events/$id" -H "$AUTH" > /dev/null || fail "DELETE /v1/events/$id"
all_original "the departed node after the event" 10
until_status 10 '.discovery.departed == [] and ([.unreachable_nodes[].url] | index("'"$AGENT"'") == null) and .nodes == 1'
grep -q "agent '$AGENT' left the Slurm inventory and holds no cap of ours: dropped" "$T/ctl.log" ||
  fail "the drop is not logged: $(grep -i 'inventory\|discovery' "$T/ctl.log" | tail -n 5)"

# 6. Listed again: an agent again (the ghost, never answered, is dropped).
rm -f "$T/hide"
until_status 10 '.nodes == 1 and .unreachable == 0 and .discovery.departed == [] and .discovery.agents == 1'
all_original "after the node came back"

kill -TERM "$CTL_PID"
for ((i = 0; i < 100; i++)); do kill -0 "$CTL_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$CTL_PID" 2>/dev/null && fail "the controller did not stop within 10 s of SIGTERM"
rc=0
wait "$CTL_PID" || rc=$?
[ "$rc" = 0 ] || fail "the controller exited $rc: $(tail -n 20 "$T/ctl.log")"
! grep -q Sanitizer "$T/ctl.log" || fail "sanitizer report from the controller: $(cat "$T/ctl.log")"
all_original "after the controller stopped"
echo "slurm_discovery: ok"
