#!/usr/bin/env bash
# Issue 11's event on a real Slurm (scripts/slurm-testbed.sh): pflexd on the
# fake NVML (4 GPUs drawing 650 W each, limits 200-700 W), pflex_spank.so,
# and pflex-controller with that one agent and the classes rigid (floor 99%)
# and flex50 (floor 50%), neither with a match: a job gets its class only
# from what it was submitted with. Two sbatch jobs of those classes start,
# the plugin registers their GPUs and classes with pflexd, the controller
# reads them; a 30% event caps the flexible job's GPUs more than the rigid
# one's, each within its floor, the cluster at or under the target; the
# flexible job's end mid-event leaves its GPUs at the event-safe fallback,
# and the event's end brings every GPU back to its original limit. Every
# wait is bounded; the EXIT trap stops Slurm, pflexd and the controller.
source "$(dirname "$0")/slurm_common.bash"

CTL="$PFLEX_BINARY_DIR/pflex-controller"
[ -x "$CTL" ] || fail "missing $CTL"
start_pflexd --hz 5
start_bed timeout_ms=2000

echo "controller-token-slurm-event-1" > "$T/ctok"
chmod 600 "$T/ctok"
echo "$URL" > "$T/agents"
CPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$CTL" --agents-file "$T/agents" --agent-token-file "$T/token" --token-file "$T/ctok" \
  --state-db "$T/ctl.db" --listen "127.0.0.1:$CPORT" --round-s 0.5 --lease-rounds 4 \
  --agent-timeout-s 0.4 --class rigid,floor_pct=99 --class flex50,floor_pct=50 > "$T/ctl.log" 2>&1 &
AGENT_PIDS+=($!)
C="http://127.0.0.1:$CPORT"
AUTH="Authorization: Bearer $(cat "$T/ctok")"
for ((i = 0; i < 100; i++)); do curl -sf "$C/v1/health" > /dev/null && break; sleep 0.1; done
curl -sf "$C/v1/health" > /dev/null || fail "the controller did not start: $(cat "$T/ctl.log")"

rigid=$(submit_held --gres=gpu:1 --pflex-class=rigid)
flex=$(submit_held --gres=gpu:2 --pflex-class=flex50)
wait_state "$rigid" RUNNING 30
wait_state "$flex" RUNNING 30
g_rigid=$(wait_registered "$rigid" 10)
g_flex=$(wait_registered "$flex" 10)
echo "rigid job $rigid: GPU $g_rigid; flex50 job $flex: GPUs $g_flex"
[[ $g_flex =~ ^[0-3],[0-3]$ ]] || fail "flex job has GPUs '$g_flex', want two"

# The controller sees both jobs with the classes they were submitted with,
# uncapped long enough to learn their draw.
status_job() { curl -sf "$C/v1/status" | jq -c --arg j "$1" ".jobs[] | select(.id == \$j) | $2"; }
seen() { [ "$(status_job "$rigid" '[.class, .floor]')" = '["rigid",0.99]' ] &&
  [ "$(status_job "$flex" '[.class, .floor]')" = '["flex50",0.5]' ]; }
for ((i = 0; i < 100; i++)); do seen && break; sleep 0.1; done
seen || fail "the controller does not see the jobs' classes: $(curl -s "$C/v1/status")"
sleep 2

# A 30% cut of the measured 2600 W.
id=$(curl -sf -X POST "$C/v1/events" -H "$AUTH" -d '{"cut_pct":30,"start":"now","duration_s":120}' | jq -e '.id') ||
  fail "POST /v1/events refused"
gpu_limit_w() { # GPU: pflexd's limit of it, in W
  api_unix GET /v1/gpus
  echo "$BODY" | jq --argjson g "$1" '.gpus[] | select(.index == $g) | .limit_w'
}
max_limit() { local g m=0 l; for g in ${1//,/ }; do l=$(gpu_limit_w "$g"); m=$(jq -n "[$m, $l] | max"); done; echo "$m"; }
capped() {
  local r f
  r=$(max_limit "$g_rigid") f=$(max_limit "$g_flex")
  jq -ne "$f < $r and $f < 700" > /dev/null &&
    curl -sf "$C/v1/status" | jq -e '.compliant == true' > /dev/null
}
for ((i = 0; i < 150; i++)); do capped && break; sleep 0.1; done
capped || fail "the event did not cap the flex job more than the rigid one within 15 s: rigid $(max_limit "$g_rigid") W, flex $(max_limit "$g_flex") W; $(curl -s "$C/v1/status")"
st=$(curl -sf "$C/v1/status")
echo "during the event: rigid at $(max_limit "$g_rigid") W, flex50 at $(max_limit "$g_flex") W; target $(jq .target_w <<< "$st") W, measured $(jq .measured_w <<< "$st") W"
# Each within its floor: the throughput the controller predicts at the cap,
# relative to the job's uncapped throughput (its curve's T_max).
for j in "$rigid" "$flex"; do
  jq -e --arg j "$j" '.jobs[] | select(.id == $j) |
    (.predicted_throughput / (.throughput_uncapped // 1)) >= .floor - 1e-3' <<< "$st" > /dev/null ||
    fail "job $j below its floor: $(jq -c --arg j "$j" '.jobs[] | select(.id == $j)' <<< "$st")"
done

# The flex job ends mid-event: its GPUs go to the lease's event-safe
# fallback, not to their default limit (the controller may cap them lower
# again as GPUs without a job).
release "$flex"
wait_ended "$flex" 30
[ -z "$(pflexd_job_gpus "$flex")" ] || fail "pflexd still lists job $flex"
for g in ${g_flex//,/ }; do
  l=$(gpu_limit_w "$g")
  jq -ne "$l < 700" > /dev/null || fail "GPU $g of the ended job at $l W during the event"
done

# The event's end: every GPU back at its original limit.
curl -sf -X DELETE "$C/v1/events/$id" -H "$AUTH" > /dev/null || fail "DELETE /v1/events/$id"
restored() { local g; for g in 0 1 2 3; do [ "$(limit "$g")" = "$ORIG_MW" ] || return 1; done; }
for ((i = 0; i < 100; i++)); do restored && break; sleep 0.1; done
restored || fail "GPUs not restored after the event: $(for g in 0 1 2 3; do limit "$g"; done | tr '\n' ' ')"
release "$rigid"
wait_ended "$rigid" 30
restored || fail "GPUs not at their original limits after the rigid job ended"
echo "slurm_event: ok"
