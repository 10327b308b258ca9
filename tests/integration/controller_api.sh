# pflex-controller against two real pflexd agents on the fake NVML, on
# loopback: the API's paths with their bad inputs (the field named, nothing
# applied), bearer tokens, an event's caps with leases on the agents, ending
# it early, a kill -9 of the controller mid-event (the agents fall back at
# lease end; the restarted controller resumes), the report, bad configs.
source "$(dirname "$0")/controller_common.bash"
# PLplot's font stack (the report's figure) keeps one-time allocations.
export LSAN_OPTIONS="suppressions=$(dirname "$0")/lsan-plplot.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

echo "agent-token-for-tests-0001" > "$T/atok"; chmod 600 "$T/atok"
echo "controller-token-for-tests-1" > "$T/ctok"; chmod 600 "$T/ctok"
printf '# empty\n' > "$T/pflexd.conf"; chmod 600 "$T/pflexd.conf"
: > "$T/agents"
APORT=()
for a in 0 1; do
  agent_state "$T/node$a.nvml" 2
  mkdir -m 700 "$T/state$a"
  port=$(free_port)
  APORT+=("$port")
  FAKE_NVML_STATE="$T/node$a.nvml" "$PFLEXD" --config "$T/pflexd.conf" --backend nvml \
    --nvml-library "$FAKE_LIB" --listen "127.0.0.1:$port" --token-file "$T/atok" \
    --state-dir "$T/state$a" --socket "" --statsd "" --hz 5 > "$T/agent$a.log" 2>&1 &
  PIDS+=($!)
  echo "http://127.0.0.1:$port" >> "$T/agents"
done
for port in "${APORT[@]}"; do
  wait_until 10 curl -sf "127.0.0.1:$port/v1/health" || fail "pflexd on $port did not start"
done

CPORT=$(free_port)
start_controller() {
  "$CTL" --agents-file "$T/agents" --agent-token-file "$T/atok" --token-file "$T/ctok" \
    --state-db "$T/ctl.db" --listen "127.0.0.1:$CPORT" --round-s 0.5 --lease-rounds 4 \
    --agent-timeout-s 0.4 >> "$T/ctl.log" 2>&1 &
  CTLPID=$!
  PIDS+=("$CTLPID")
  wait_until 10 curl -sf "127.0.0.1:$CPORT/v1/health" || fail "controller did not start"
}
start_controller
C="http://127.0.0.1:$CPORT"
AUTH="Authorization: Bearer $(cat "$T/ctok")"

# status: fields, no event
wait_until 5 sh -c "curl -sf $C/v1/status | jq -e '.round >= 2'" || fail "no rounds"
curl -sf "$C/v1/status" | jq -e '.target_w == null and .compliant == null and .nodes == 2 and
  (.measured_w > 2300) and (.jobs | length) == 0' >/dev/null || fail "status without an event"

# A job's metadata flows from the agent's job API into the controller's
# view: no class "gold" is configured here, so no class, but its weight and
# min_throughput (as its floor) are used.
ATOK="Authorization: Bearer $(cat "$T/atok")"
curl -sf -X PUT "127.0.0.1:${APORT[0]}/v1/jobs/meta1" -H "$ATOK" \
  -d '{"gpus":[0,1],"class":"gold","weight":3,"min_throughput":0.4}' > /dev/null || fail "PUT /v1/jobs/meta1"
meta_seen() { curl -sf "$C/v1/status" | jq -e '.jobs[] | select(.id == "meta1") |
  .requested_class == "gold" and .class == null and .weight == 3 and .floor == 0.4'; }
wait_until 5 meta_seen || fail "the job's metadata did not reach the controller: $(curl -s "$C/v1/status")"
curl -sf -X DELETE "127.0.0.1:${APORT[0]}/v1/jobs/meta1" -H "$ATOK" > /dev/null || fail "DELETE /v1/jobs/meta1"
wait_until 5 sh -c "curl -sf $C/v1/status | jq -e '(.jobs | length) == 0'" || fail "meta1 still listed"

# bad requests: status and field, nothing stored
expect_error() { # STATUS FIELD BODY [AUTH]
  local out code
  out=$(curl -s -w '\n%{http_code}' -X POST "$C/v1/events" -H "${4:-$AUTH}" --data-binary "$3")
  code=$(echo "$out" | tail -1)
  [ "$code" = "$1" ] || fail "body $3: HTTP $code, expected $1 ($out)"
  echo "$out" | head -1 | jq -e --arg f "$2" '.field == $f and (.error | length) > 0' >/dev/null ||
    fail "body $3: error does not name '$2': $out"
}
expect_error 401 Authorization '{"target_w":1000,"start":"now","duration_s":10}' "Authorization: Bearer wrong"
expect_error 401 Authorization '{"target_w":1000,"start":"now","duration_s":10}' "X-None: 1"
expect_error 400 "" '{"target_w":1000,'
expect_error 400 colour '{"target_w":1000,"start":"now","duration_s":10,"colour":"red"}'
expect_error 400 cut_pct '{"target_w":1000,"cut_pct":5,"start":"now","duration_s":10}'
expect_error 422 cut_pct '{"cut_pct":120,"start":"now","duration_s":10}'
expect_error 400 start '{"target_w":1000,"start":"yesterday","duration_s":10}'
expect_error 422 ramp_s '{"target_w":1000,"start":"now","duration_s":10,"ramp_s":11}'
big=$(python3 -c 'print("{\"target_w\":1000,\"pad\":\"" + "x" * 70000 + "\"}")')
expect_error 413 "" "$big"
curl -sf "$C/v1/events" | jq -e '.events | length == 0' >/dev/null || fail "a refused event was stored"
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT "$C/v1/events" -H "$AUTH")
[ "$code" = 405 ] || fail "PUT /v1/events: $code, expected 405"
code=$(curl -s -o /dev/null -w '%{http_code}' "$C/v1/nothing")
[ "$code" = 404 ] || fail "GET /v1/nothing: $code, expected 404"

# an event: every GPU capped under a lease with a wattage fallback
# (4 GPUs at 600 W = 2400 W; target 1600 W: 400 W each)
id=$(curl -sf -X POST "$C/v1/events" -H "$AUTH" \
  -d '{"target_w":1600,"start":"now","duration_s":60}' | jq -e '.id')
capped() {
  local port
  for port in "${APORT[@]}"; do
    curl -sf "127.0.0.1:$port/v1/gpus" | jq -e 'all(.gpus[]; .limit_w <= 400 and .lease_state == "held")' || return 1
  done
}
wait_until 5 capped || fail "the agents' GPUs were not capped under a lease"
curl -sf "$C/v1/status" | jq -e '.target_w == 1600 and .event == '"$id"' and
  .outage_rise_w >= 0 and .outage_reserve_w >= 0' >/dev/null || fail "status during the event"
curl -sf "$C/metrics" > "$T/metrics.txt"
grep -q '^pflex_controller_target_watts 1600$' "$T/metrics.txt" || fail "metrics: target"
grep -Eq '^pflex_controller_outage_reserve_watts [0-9.e+-]+$' "$T/metrics.txt" ||
  fail "metrics: the outage reserve"
grep -Eq '^pflex_controller_allocation_cpu_seconds [0-9.e+-]+$' "$T/metrics.txt" ||
  fail "metrics: the allocation's CPU time"
grep -q '^pflex_controller_job_cap_watts{job=' "$T/metrics.txt" && fail "metrics: a job without GPUs"
# promtool comes with Debian's prometheus package (scripts/install-deps.sh on the pflexd branch)
if command -v promtool >/dev/null; then
  promtool check metrics < "$T/metrics.txt" || fail "promtool check metrics"
else
  echo "note: no promtool: the metrics format is not checked"
fi

# kill -9 mid-event: leases (2 s) run out and the agents move to the fallback
kill -KILL "$CTLPID"
fellback() {
  local port
  for port in "${APORT[@]}"; do
    curl -sf "127.0.0.1:$port/v1/gpus" | jq -e 'all(.gpus[]; .lease_state == "fallback" and .limit_w <= 400)' || return 1
  done
}
wait_until 6 fellback || fail "the agents did not move to the fallback after the controller died"
start_controller
grep -q "resuming an active event" "$T/ctl.log" || fail "the restarted controller did not resume"
wait_until 5 capped || fail "the restarted controller did not take the caps back"

# ending it early lifts the caps: every GPU back at 700 W
curl -sf -X DELETE "$C/v1/events/$id" -H "$AUTH" | jq -e '.ended_early != null' >/dev/null || fail "DELETE"
lifted() {
  local port
  for port in "${APORT[@]}"; do
    curl -sf "127.0.0.1:$port/v1/gpus" | jq -e 'all(.gpus[]; .limit_w == 700)' || return 1
  done
}
wait_until 5 lifted || fail "caps not lifted after the event ended"
for a in 0 1; do grep -c 'limit_mw=700000' "$T/node$a.nvml" | grep -qx 2 || fail "node $a: NVML limits not back"; done
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$C/v1/events/$id" -H "$AUTH")
[ "$code" = 409 ] || fail "second DELETE: $code, expected 409"
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$C/v1/events/999" -H "$AUTH")
[ "$code" = 404 ] || fail "DELETE of an unknown event: $code, expected 404"
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$C/v1/events/abc" -H "$AUTH")
[ "$code" = 400 ] || fail "DELETE with a bad id: $code, expected 400"

# the report: JSON and a figure
kill -TERM "$CTLPID"; wait "$CTLPID" 2>/dev/null || true
"$CTL" report "$id" --state-db "$T/ctl.db" --plot "$T/event.svg" > "$T/report.json"
jq -e '.event.id == '"$id"' and .rounds >= 2 and (.compliance_s | type) == "number"' "$T/report.json" >/dev/null ||
  fail "report: $(cat "$T/report.json")"
grep -q '<svg' "$T/event.svg" || fail "report: no SVG"
out=$("$CTL" report 999 --state-db "$T/ctl.db" 2>&1 || true)
echo "$out" | grep -q "error: no event 999" || fail "report of an unknown event: $out"
# the event was ended (DELETE): its state says so; the worst excess after compliance is there
jq -e '.event.state == "ended" and (.max_over_pct_after_compliance | type) == "number" and
  .max_over_pct >= 0' "$T/report.json" >/dev/null || fail "report: state/excess: $(cat "$T/report.json")"
# the store from --config's state_db; a wrong path is refused, not created
printf '[controller]\nstate_db = %s\n' "$T/ctl.db" > "$T/report.conf"; chmod 600 "$T/report.conf"
"$CTL" report "$id" --config "$T/report.conf" | jq -e '.event.id == '"$id" >/dev/null ||
  fail "report --config did not read the conf's state_db"
set +e
out=$(cd "$T" && "$CTL" report "$id" --state-db nosuch.db 2>&1); rc=$?
set -e
[ "$rc" = 1 ] && echo "$out" | grep -qF "error: cannot open 'nosuch.db': No such file or directory" ||
  fail "report of a missing store: exit $rc: $out"
[ ! -e "$T/nosuch.db" ] || fail "report created a store at a wrong path"

# killed mid-event and back only after the event is over: the agents sit at
# their fallbacks, and the restarted controller lifts them
start_controller
id2=$(curl -sf -X POST "$C/v1/events" -H "$AUTH" \
  -d '{"target_w":1600,"start":"now","duration_s":3}' | jq -e '.id')
wait_until 5 capped || fail "second event: not capped"
kill -KILL "$CTLPID"
wait_until 6 fellback || fail "second event: no fallback"
sleep 3 # the event is over now
start_controller
wait_until 5 lifted || fail "a controller back after the event did not lift the fallbacks"
kill -TERM "$CTLPID"; wait "$CTLPID" 2>/dev/null || true

# One agent listed twice under two spellings: counted once, said in the log
# and the status.
{ cat "$T/agents"; echo "http://localhost:${APORT[0]}/"; } > "$T/agents2"
"$CTL" --agents-file "$T/agents2" --agent-token-file "$T/atok" --token-file "$T/ctok" \
  --state-db "$T/dup.db" --listen "127.0.0.1:$CPORT" --round-s 0.5 --lease-rounds 4 \
  --agent-timeout-s 0.4 > "$T/dup.log" 2>&1 &
CTLPID=$!
PIDS+=("$CTLPID")
wait_until 10 curl -sf "127.0.0.1:$CPORT/v1/health" || fail "controller with a duplicate agent did not start"
# The agents' own total: counting node 0 twice would add half of it again.
agents_w() { for p in "${APORT[@]}"; do curl -sf "127.0.0.1:$p/v1/gpus"; done |
  jq -s '[.[].gpus[].power_w] | add'; }
dup_seen() { curl -sf "$C/v1/status" | jq -e --arg u "http://localhost:${APORT[0]}/" \
  --argjson w "$(agents_w)" '.nodes == 3 and (.duplicate_nodes | length) == 1 and
   .duplicate_nodes[0].url == $u and .measured_w < 1.2 * $w and .measured_w > 0.8 * $w'; }
wait_until 5 dup_seen > /dev/null || fail "a node listed twice: $(curl -s "$C/v1/status" | jq -c '{nodes, measured_w, duplicate_nodes}')"
grep -q "error: agent 'http://localhost:${APORT[0]}/' reports the GPUs of agent 'http://127.0.0.1:${APORT[0]}'" "$T/dup.log" ||
  fail "a node listed twice: not logged: $(cat "$T/dup.log")"
[ "$(grep -c 'one node listed twice' "$T/dup.log")" = 1 ] || fail "a node listed twice: logged more than once"
kill -TERM "$CTLPID"; wait "$CTLPID" 2>/dev/null || true

# SIGHUP reads the schedule file again: a new entry is added once, a bad file
# is refused whole (logged, nothing added) and the controller keeps running.
echo '{"events":[]}' > "$T/sched.json"; chmod 600 "$T/sched.json"
"$CTL" --agents-file "$T/agents" --agent-token-file "$T/atok" --token-file "$T/ctok" \
  --state-db "$T/hup.db" --listen "127.0.0.1:$CPORT" --round-s 0.5 --lease-rounds 4 \
  --agent-timeout-s 0.4 --schedule-file "$T/sched.json" > "$T/hup.log" 2>&1 &
CTLPID=$!
PIDS+=("$CTLPID")
wait_until 10 curl -sf "127.0.0.1:$CPORT/v1/health" || fail "controller with a schedule did not start"
grep -q "schedule '$T/sched.json': 0 events added" "$T/hup.log" || fail "schedule not logged: $(cat "$T/hup.log")"
echo '{"events":[{"target_w":9000,"start":"2031-06-01T12:00:00Z","duration_s":60}]}' > "$T/sched.json"
kill -HUP "$CTLPID"
hup_added() { curl -sf "$C/v1/events" | jq -e '[.events[] | select(.target_w == 9000)] | length == 1'; }
wait_until 5 hup_added > /dev/null || fail "SIGHUP: the new scheduled event is not listed: $(curl -s "$C/v1/events")"
grep -q "SIGHUP: schedule '$T/sched.json' read again: 1 events added" "$T/hup.log" || fail "SIGHUP not logged: $(cat "$T/hup.log")"
kill -HUP "$CTLPID" # the same file again: nothing added twice
wait_until 5 sh -c "grep -q 'read again: 0 events added' '$T/hup.log'" || fail "second SIGHUP not logged"
echo '{"events":[{"target_w":8000,"start":"2031-06-02T12:00:00Z","duration_s":60},{"cut_pct":500}]}' > "$T/sched.json"
kill -HUP "$CTLPID"
wait_until 5 sh -c "grep -q 'error: SIGHUP: .*no event added' '$T/hup.log'" || fail "a bad schedule on SIGHUP not logged: $(cat "$T/hup.log")"
kill -0 "$CTLPID" || fail "the controller died on SIGHUP"
curl -sf "$C/v1/events" | jq -e '[.events[] | select(.target_w == 8000)] | length == 0' > /dev/null ||
  fail "a refused schedule's good entry was added"
# the 2031 event is still to come: counted as scheduled, not active; a DELETE
# before its start cancels it
wait_until 5 sh -c "curl -sf '$C/metrics' | grep -qx 'pflex_controller_events_scheduled 1'" ||
  fail "metrics: the scheduled event is not counted: $(curl -s "$C/metrics" | grep events_)"
curl -sf "$C/metrics" | grep -qx 'pflex_controller_events_active 0' || fail "metrics: a scheduled event counted as active"
sid=$(curl -sf "$C/v1/events" | jq -r '.events[] | select(.target_w == 9000) | .id')
curl -sf -X DELETE "$C/v1/events/$sid" -H "$AUTH" | jq -e '.state == "cancelled"' > /dev/null ||
  fail "DELETE before the start: not cancelled"
grep -q "event $sid cancelled over the API" "$T/hup.log" || fail "the cancel not logged: $(cat "$T/hup.log")"
kill -TERM "$CTLPID"; wait "$CTLPID" 2>/dev/null || true

# bad configuration: exit 2, the key or line named
printf '[controller]\nround_s = fast\n' > "$T/bad.conf"
set +e
out=$("$CTL" --config "$T/bad.conf" 2>&1); rc=$?
set -e
[ "$rc" = 2 ] || fail "bad config: exit $rc"
echo "$out" | grep -q "line 2: 'round_s': 'fast' is not a number" || fail "bad config message: $out"
# keys that do not go together: the file is named beside the values
printf '[controller]\nagents_file = %s\nstate_db = %s\nlisten =\nagent_timeout_s = 10\n' "$T/agents" "$T/x.db" > "$T/bad2.conf"
set +e
out=$("$CTL" --config "$T/bad2.conf" 2>&1); rc=$?
set -e
[ "$rc" = 2 ] && echo "$out" | grep -qF "agent_timeout_s 10 must be shorter than a lease" &&
  echo "$out" | grep -qF "(the settings of '$T/bad2.conf' and the options)" || fail "a bad pair of keys: exit $rc: $out"
set +e
out=$("$CTL" --agents-file "$T/agents" --state-db "$T/x.db" --listen "" --lease-rounds 1 2>&1); rc=$?
set -e
[ "$rc" = 2 ] && echo "$out" | grep -q -- "--lease-rounds: '1' is not an integer" || fail "lease_rounds 1 accepted: $out"
# a file the configuration names, malformed or missing: exit 2 as well
printf 'http://127.0.0.1:99999\n' > "$T/bad.agents"; chmod 600 "$T/bad.agents"
for f in "$T/bad.agents" "$T/no.agents"; do
  set +e
  out=$("$CTL" --agents-file "$f" --state-db "$T/x.db" --listen "" 2>&1); rc=$?
  set -e
  [ "$rc" = 2 ] && echo "$out" | grep -qF "$f" || fail "agents file $f: exit $rc: $out"
done
echo "controller_api: ok"
