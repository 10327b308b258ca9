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

start_pflexd --hz 5
start_bed timeout_ms=2000
echo "$URL" > "$T/agents"
start_controller --agents-file "$T/agents"
submit_rigid_flex

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
wait_flex_capped_more 15
check_floors

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
