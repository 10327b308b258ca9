#!/usr/bin/env bash
# Leases run out: without renewal the GPUs move to their fallback (the
# original limit for "default", the given wattage otherwise) within one
# sample period of the deadline (10 Hz: 100 ms), seen from outside on the
# fake NVML's state and from pflexd's own log; never before the deadline.
source "$(dirname "$0")/agent_common.bash"

fake_state 2
HZ=10
PERIOD=0.1
LEASE=1.5
start_pflexd --hz $HZ
api PUT /v1/caps '{"caps":[{"gpu":1,"watts":300}],"lease_s":60,"fallback":{"watts":500}}'
expect_code 200 "cap GPU 1 with a 500 W fallback"
t0=$(now_s)
api PUT /v1/caps "{\"caps\":[{\"gpu\":0,\"watts\":400}],\"lease_s\":$LEASE,\"fallback\":\"default\"}"
t1=$(now_s)
expect_code 200 "cap GPU 0 (and renew GPU 1) for $LEASE s"
expect_eq "$(limit 0),$(limit 1)" 400000,300000 "caps applied"

# Poll the fake's state every few ms until both GPUs moved (at most 5 s).
seen0="" seen1="" prev=$t0
for ((i = 0; i < 2000; i++)); do
  now=$(now_s)
  l0=$(limit 0) l1=$(limit 1)
  [ -z "$seen0" ] && [ "$l0" != 400000 ] && seen0=$now
  [ -z "$seen1" ] && [ "$l1" != 300000 ] && seen1=$now
  [ -n "$seen0" ] && [ -n "$seen1" ] && break
  awk -v n="$now" -v t="$t1" -v l=$LEASE 'BEGIN { exit !(n > t + l + 3) }' && break
done
[ -n "$seen0" ] && [ -n "$seen1" ] || fail "the fallback never came (limits $(limit 0), $(limit 1))"
expect_eq "$(limit 0)" 700000 "GPU 0 at its original limit"
expect_eq "$(limit 1)" 500000 "GPU 1 at its fallback"
# Not before the deadline (the lease started after t0), and within one sample
# period after it (the lease started before t1); 50 ms are allowed for this
# shell's polling on a shared machine.
for s in "$seen0" "$seen1"; do
  awk -v s="$s" -v t0="$t0" -v l=$LEASE 'BEGIN { exit !(s >= t0 + l) }' ||
    fail "fallback before the deadline: seen at $s, lease from $t0"
  awk -v s="$s" -v t1="$t1" -v l=$LEASE -v p=$PERIOD 'BEGIN { exit !(s <= t1 + l + p + 0.05) }' ||
    fail "fallback later than one sample period: seen $(awk -v s="$s" -v t1="$t1" -v l=$LEASE 'BEGIN{printf "%.3f", s - t1 - l}') s after the deadline"
done
late=$(sed -n 's/.*fallback applied \([0-9.]*\) ms after the deadline/\1/p' "$LOG" | head -n1)
[ -n "$late" ] || fail "no fallback line in the log: $(cat "$LOG")"
awk -v l="$late" 'BEGIN { exit !(l >= 0 && l <= 100) }' || fail "pflexd applied the fallback $late ms late"

api_noauth GET /v1/gpus
expect_eq "$(echo "$BODY" | jq -c '[.gpus[] | .lease_state]')" '["none","fallback"]' "lease states"
expect_eq "$(echo "$BODY" | jq -c '[.gpus[] | .lease_s_left]')" '[null,null]' "no lease left"
expect_eq "$(jq -c '[.gpus[] | [.state, .fallback_mw]]' "$STATE/pflexd-leases.json")" '[["fallback",500000]]' "lease file"
curl -s "$URL/metrics" | grep -q '^pflex_lease_expiries_total 2$' || fail "expiries not counted"
# A fallback wattage is held until a request or DELETE lifts it.
api DELETE /v1/caps
expect_code 200 "DELETE"
expect_eq "$(limit 1)" 700000 "GPU 1 restored"
stop_pflexd TERM
echo "agent_lease: ok (fallback $late ms after the deadline)"
