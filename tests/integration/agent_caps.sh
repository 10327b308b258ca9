#!/usr/bin/env bash
# PUT /v1/caps and DELETE /v1/caps of pflexd on the fake NVML: the token rule
# over TCP, clamping reported, every bad body refused with a JSON error naming
# the field and nothing applied (limits and the fake's set counts unchanged),
# per-job caps, renewal of every lease by one request, all-or-nothing when a
# GPU fails, every set preceded by its restore record, DELETE restoring all.
source "$(dirname "$0")/agent_common.bash"

fake_state 4
export FAKE_NVML_RESTORE_CHECK="$STATE/restore.json"
start_pflexd

# -- the token: writes over TCP need it ------------------------------------
api_noauth PUT /v1/caps '{"caps":[{"gpu":0,"watts":450}]}'
expect_error 401 "" "PUT without a token"
api_noauth PUT /v1/caps '{"caps":[{"gpu":0,"watts":450}]}' -H "Authorization: Bearer ${TOKEN}x"
expect_error 401 "" "PUT with a wrong token"
api_noauth PUT /v1/caps '{"caps":[{"gpu":0,"watts":450}]}' -H "Authorization: Basic $TOKEN"
expect_error 401 "" "PUT with another scheme"
api_noauth DELETE /v1/caps
expect_error 401 "" "DELETE without a token"
expect_eq "$(limit 0)" 700000 "no cap after the refused writes"

# -- bad bodies: 4xx naming the field, nothing applied -----------------------
bad() { # STATUS FIELD BODY
  api PUT /v1/caps "$3"
  expect_error "$1" "$2" "body $3"
}
bad 400 "" '{"caps":[{"gpu":0,"watts":450}'
bad 400 "" '[1,2]'
bad 400 "" ''
bad 400 "caps" '{"lease_s":30}'
bad 400 "caps" '{"caps":{"gpu":0}}'
bad 400 "bogus" '{"caps":[],"bogus":1}'
bad 400 "caps[0].volts" '{"caps":[{"gpu":0,"watts":450,"volts":1}]}'
bad 400 "caps[0].watts" '{"caps":[{"gpu":0}]}'
bad 400 "caps[0].watts" '{"caps":[{"gpu":0,"watts":"450"}]}'
bad 422 "caps[0].watts" '{"caps":[{"gpu":0,"watts":-5}]}'
bad 422 "caps[1].watts" '{"caps":[{"gpu":0,"watts":450},{"gpu":1,"watts":1e9}]}'
bad 400 "caps[0].gpu" '{"caps":[{"gpu":0.5,"watts":450}]}'
bad 422 "caps[0].gpu" '{"caps":[{"gpu":4,"watts":450}]}'
bad 422 "caps[0].gpu" '{"caps":[{"gpu":-1,"watts":450}]}'
bad 400 "caps[0].gpu" '{"caps":[{"gpu":0,"job":"7","watts":450}]}'
bad 422 "caps[1].gpu" '{"caps":[{"gpu":2,"watts":450},{"gpu":2,"watts":400}]}'
bad 422 "caps[0].job" '{"caps":[{"job":"nosuchjob","watts":450}]}'
bad 400 "caps[0].job" '{"caps":[{"job":"a.b","watts":450}]}'
bad 422 "lease_s" '{"caps":[{"gpu":0,"watts":450}],"lease_s":0}'
bad 422 "lease_s" '{"caps":[{"gpu":0,"watts":450}],"lease_s":1e12}'
bad 400 "lease_s" '{"caps":[{"gpu":0,"watts":450}],"lease_s":"30"}'
bad 400 "fallback" '{"caps":[{"gpu":0,"watts":450}],"fallback":"original"}'
bad 400 "fallback.watts" '{"caps":[{"gpu":0,"watts":450}],"fallback":{}}'
bad 400 "fallback.kw" '{"caps":[{"gpu":0,"watts":450}],"fallback":{"watts":500,"kw":1}}'
bad 422 "fallback.watts" '{"caps":[{"gpu":0,"watts":450}],"fallback":{"watts":0}}'
bad 400 "" '{"caps":[],"caps":[]}'
# A body over the size limit (64 KiB by default): 413 before anything is parsed.
big=$(python3 -c 'print("{\"caps\":[" + ",".join(["{\"gpu\":0,\"watts\":450}"]*4000) + "]}")')
api PUT /v1/caps "$big"
expect_error 413 "" "an oversized body"
# The same without a Content-Length (chunked): cut off while it streams in.
api PUT /v1/caps "$big" -H "Transfer-Encoding: chunked"
expect_error 413 "" "an oversized chunked body"
# A body of exactly the limit is read (and here refused as JSON, not for its size).
api PUT /v1/caps "$(python3 -c 'print("{\"caps\":[]" + " " * (65536 - 12) + "}", end="")')"
expect_code 200 "a body of 65536 bytes"
for i in 0 1 2 3; do
  expect_eq "$(limit $i)" 700000 "GPU $i after the bad bodies"
  expect_eq "$(set_count $i)" 0 "set calls on GPU $i after the bad bodies"
done
[ ! -s "$STATE/restore.json" ] || [ "$(jq '.records | length' "$STATE/restore.json")" = 0 ] ||
  fail "restore records after refused requests: $(cat "$STATE/restore.json")"

# -- a good request, clamped where out of range -----------------------------
api PUT /v1/caps '{"caps":[{"gpu":0,"watts":450},{"gpu":1,"watts":150}],"lease_s":30,"fallback":"default"}'
expect_code 200 "PUT /v1/caps"
expect_eq "$(echo "$BODY" | jq -c '[.caps[] | [.gpu, .applied_w, .clamped]]')" '[[0,450,false],[1,200,true]]' "applied caps"
expect_eq "$(echo "$BODY" | jq -c '[.caps[] | .before_w]')" '[700,700]' "before values"
expect_eq "$(limit 0)" 450000 "GPU 0 capped"
expect_eq "$(limit 1)" 200000 "GPU 1 clamped to its minimum"
expect_eq "$(limit 2)" 700000 "GPU 2 untouched"
expect_eq "$(jq -r '[.records[].uuid] | sort | join(",")' "$STATE/restore.json")" \
  "GPU-fake-0000-0000-0000-000000000000,GPU-fake-0000-0000-0000-000000000001" "restore records first"
[ -z "$(fake_get gpu0.violation)$(fake_get gpu1.violation)" ] || fail "a set without its restore record"
expect_eq "$(jq -r '.gpus | map(.state) | join(",")' "$STATE/pflexd-leases.json")" "held,held" "lease file"
# The audit trail: one note when GPUs come under a cap.
grep -qx 'note: caps taken: GPUs 0 at 450 W, 1 at 200 W; lease 30 s, then fallback to the default limit' "$LOG" ||
  { cat "$LOG" >&2; fail "no audit note for the caps taken"; }

# -- the Unix socket needs no token (its mode decides) -----------------------
[ "$(stat -c %a "$SOCK")" = 660 ] || fail "socket mode $(stat -c %a "$SOCK"), expected 660"
api_unix PUT /v1/caps '{"caps":[{"gpu":2,"watts":500}],"lease_s":5}'
expect_code 200 "PUT over the Unix socket"
expect_eq "$(limit 2)" 500000 "GPU 2 capped through the socket"

# -- one request renews every lease of the node ------------------------------
api GET /v1/gpus
left0=$(echo "$BODY" | jq '.gpus[0].lease_s_left')
awk -v l="$left0" 'BEGIN { exit !(l > 3 && l <= 5) }' || fail "GPU 0's lease after the 5 s renewal: $left0"
api PUT /v1/caps '{"caps":[],"lease_s":120}'
expect_code 200 "renewal"
expect_eq "$(echo "$BODY" | jq .renewed)" 3 "leases renewed"
api GET /v1/gpus
echo "$BODY" | jq -e '[.gpus[0,1,2].lease_s_left] | all(. > 100 and . <= 120)' >/dev/null ||
  fail "leases not renewed: $BODY"
echo "$BODY" | jq -e '.gpus[3].lease_s_left == null' >/dev/null || fail "GPU 3 has no lease: $BODY"
expect_eq "$(limit 0)" 450000 "renewal keeps the cap"
expect_eq "$(grep -c '^note: caps taken:' "$LOG")" 2 "a renewal is not logged as caps taken"

# -- per-job caps -------------------------------------------------------------
api PUT /v1/jobs/j1 '{"gpus":[2,3]}'
expect_code 200 "job registration"
api PUT /v1/caps '{"caps":[{"job":"j1","watts":300}],"lease_s":60}'
expect_code 200 "per-job cap"
expect_eq "$(limit 2),$(limit 3)" 300000,300000 "the job's GPUs capped"
bad 422 "caps[1].gpu" '{"caps":[{"job":"j1","watts":300},{"gpu":3,"watts":400}]}'

# -- all-or-nothing: GPU 3 fails, GPU 0 is not left changed ------------------
fake_set gpu3.fail.set_limit no_permission
api PUT /v1/caps '{"caps":[{"gpu":0,"watts":350},{"gpu":3,"watts":350}],"lease_s":60}'
[ "${CODE:0:1}" = 5 ] || [ "${CODE:0:1}" = 4 ] || fail "a failing GPU: expected an error, got $CODE"
echo "$BODY" | jq -e '.error | test("GPU 3")' >/dev/null || fail "the error names GPU 3: $BODY"
expect_eq "$(limit 0)" 450000 "GPU 0 rolled back to its previous cap"
expect_eq "$(limit 3)" 300000 "GPU 3 unchanged"
fake_set gpu3.fail.set_limit none

# -- DELETE restores every GPU -------------------------------------------------
api DELETE /v1/caps
expect_code 200 "DELETE /v1/caps"
expect_eq "$(echo "$BODY" | jq '.restored | length')" 4 "GPUs restored"
for i in 0 1 2 3; do expect_eq "$(limit $i)" 700000 "GPU $i after DELETE"; done
expect_eq "$(jq '.records | length' "$STATE/restore.json")" 0 "restore records cleared"
expect_eq "$(jq '.gpus | length' "$STATE/pflexd-leases.json")" 0 "lease file empty"
grep -qx 'note: caps released: 4 GPUs restored, 0 failed' "$LOG" || { cat "$LOG" >&2; fail "no audit note for the release"; }
api DELETE /v1/caps
expect_code 200 "DELETE with nothing held"

# -- wrong method and path ---------------------------------------------------
api POST /v1/caps '{}'
expect_error 405 "" "POST /v1/caps"
stop_pflexd TERM
expect_eq "$RC" 0 "exit status after SIGTERM"
echo "agent_caps: ok"
