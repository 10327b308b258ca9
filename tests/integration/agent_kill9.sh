#!/usr/bin/env bash
# pflexd killed with SIGKILL while caps are leased, then restarted: every GPU
# ends at a live lease's cap (resumed, re-applied even if the limit was reset
# meanwhile), at its fallback, or restored to its original limit. Also:
# SIGTERM restores; keep_caps hands the caps to the next instance (rolling
# upgrade); a pending restore is finished; a corrupt lease file is refused.
source "$(dirname "$0")/agent_common.bash"

fake_state 4
export FAKE_NVML_RESTORE_CHECK="$STATE/restore.json"
all_limits() { echo "$(limit 0),$(limit 1),$(limit 2),$(limit 3)"; }
records() { jq -r '[.records[].index] | sort | map(tostring) | join(",")' "$STATE/restore.json"; }

# -- A: killed with live leases; the restart resumes them -------------------
start_pflexd
api PUT /v1/caps '{"caps":[{"gpu":0,"watts":400},{"gpu":1,"watts":300}],"lease_s":30}'
expect_code 200 "caps for 30 s"
stop_pflexd KILL
expect_eq "$(all_limits)" 400000,300000,700000,700000 "caps while pflexd is dead"
fake_set gpu0.limit_mw 700000 # e.g. a GPU reset meanwhile
start_pflexd
grep -q "2 leases resumed" "$LOG" || fail "resume not reported: $(cat "$LOG")"
expect_eq "$(all_limits)" 400000,300000,700000,700000 "caps resumed (GPU 0 re-applied)"
api_noauth GET /v1/gpus
echo "$BODY" | jq -e '[.gpus[0,1].lease_s_left] | all(. > 20 and . <= 30)' >/dev/null ||
  fail "resumed leases keep their remaining time: $BODY"
expect_eq "$(echo "$BODY" | jq -c '[.gpus[].lease_state]')" '["held","held","none","none"]' "lease states"

# -- B: killed, the leases run out while it is dead ---------------------------
api PUT /v1/caps '{"caps":[{"gpu":2,"watts":350}],"lease_s":1,"fallback":{"watts":500}}'
api PUT /v1/caps '{"caps":[{"gpu":3,"watts":250}],"lease_s":1,"fallback":"default"}'
expect_code 200 "short leases"
stop_pflexd KILL
sleep 1.5
expect_eq "$(all_limits)" 400000,300000,350000,250000 "nothing moves while pflexd is dead"
start_pflexd
expect_eq "$(all_limits)" 700000,700000,500000,700000 "expired: default restored, GPU 2 at its fallback"
expect_eq "$(records)" 2 "only GPU 2 keeps a restore record"
api_noauth GET /v1/gpus
expect_eq "$(echo "$BODY" | jq -c '[.gpus[].lease_state]')" '["none","none","fallback","none"]' "lease states"

# -- C: a pending restore (written before restoring) is finished -------------
api PUT /v1/caps '{"caps":[{"gpu":0,"watts":420}],"lease_s":30}'
stop_pflexd KILL
jq '(.gpus[] | select(.index == 0)) |= {uuid, index, state: "restore"}' "$STATE/pflexd-leases.json" > "$T/l" &&
  cp "$T/l" "$STATE/pflexd-leases.json"
start_pflexd
expect_eq "$(limit 0)" 700000 "a pending restore done at start"
expect_eq "$(limit 2)" 500000 "the fallback is still held"

# -- D: SIGTERM restores every GPU pflexd holds ------------------------------
api PUT /v1/caps '{"caps":[{"gpu":1,"watts":333}],"lease_s":30}'
stop_pflexd TERM
expect_eq "$RC" 0 "exit status after SIGTERM"
expect_eq "$(all_limits)" 700000,700000,700000,700000 "every GPU restored at SIGTERM"
expect_eq "$(records)" "" "no restore record left"

# -- E: keep_caps: a rolling upgrade hands the caps to the next instance -----
start_pflexd --keep-caps true
api PUT /v1/caps '{"caps":[{"gpu":0,"watts":450},{"gpu":3,"watts":460}],"lease_s":30}'
stop_pflexd TERM
expect_eq "$RC" 0 "exit status with keep_caps"
grep -q "keep their caps and leases for the next pflexd" "$LOG" || fail "keep_caps not said: $(cat "$LOG")"
expect_eq "$(all_limits)" 450000,700000,700000,460000 "caps kept over the upgrade"
start_pflexd
expect_eq "$(all_limits)" 450000,700000,700000,460000 "the next instance holds them"
api_noauth GET /v1/gpus
expect_eq "$(echo "$BODY" | jq -c '[.gpus[].lease_state]')" '["held","none","none","held"]' "leases taken over"
stop_pflexd KILL

# -- F: a corrupt lease file is refused, nothing is changed -------------------
cp "$STATE/pflexd-leases.json" "$T/leases.good"
echo '{"format":"pflexd-leases","version":1,"backend":"nvml","gpus":[{"uuid":"x"}]}' > "$STATE/pflexd-leases.json"
rc=0
"$PFLEXD" --backend nvml --listen 127.0.0.1:0 --token-file "$T/token" --state-dir "$STATE" \
  --socket "$SOCK" --statsd "" > "$T/corrupt.log" 2>&1 || rc=$?
expect_eq "$rc" 1 "exit status with a corrupt lease file"
grep -q "pflexd-leases.json': gpus\[0\]" "$T/corrupt.log" || fail "reason: $(cat "$T/corrupt.log")"
expect_eq "$(all_limits)" 450000,700000,700000,460000 "nothing changed by the refused start"
cp "$T/leases.good" "$STATE/pflexd-leases.json"
start_pflexd
stop_pflexd TERM
expect_eq "$(all_limits)" 700000,700000,700000,700000 "all restored in the end"
for i in 0 1 2 3; do [ -z "$(fake_get gpu$i.violation)" ] || fail "GPU $i set without a restore record"; done
echo "agent_kill9: ok"
