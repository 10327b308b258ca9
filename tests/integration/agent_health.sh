#!/usr/bin/env bash
# GET /v1/health, wrong paths and methods, read_auth, and what pflexd refuses
# at start: a token file others may read, a symlinked token, bad options and
# config files (exit 2, naming the key and line), a config file another user
# may write, a second pflexd on the same state directory.
source "$(dirname "$0")/agent_common.bash"

fake_state 2
start_pflexd --hz 5
api_noauth GET /v1/health
expect_code 200 "GET /v1/health"
expect_eq "$(echo "$BODY" | jq -c '[.status, .gpus, .backend]')" '["ok",2,"nvml"]' "health"
api_unix GET /v1/health
expect_code 200 "health over the Unix socket"
api_noauth POST /v1/health '{}'
expect_error 405 "" "POST /v1/health"
curl -s -D "$T/headers" -o /dev/null -X POST "$URL/v1/health"
grep -qi '^Allow: GET' "$T/headers" || fail "405 without an Allow header"
api_noauth GET /v1/nothing
expect_error 404 "" "an unknown path"
api_noauth GET /v1/health?x=1
expect_code 200 "a query string is not part of the path"

# A second pflexd on the same state directory is refused; the first goes on.
"$PFLEXD" --backend nvml --listen 127.0.0.1:0 --token-file "$T/token" --state-dir "$STATE" \
  --socket "$T/run/other.sock" --statsd "" > "$T/second.log" 2>&1 && fail "a second pflexd started"
grep -q "another pflexd uses this state directory" "$T/second.log" || fail "second: $(cat "$T/second.log")"
api_noauth GET /v1/health
expect_code 200 "the first pflexd after the second was refused"
stop_pflexd TERM

# read_auth: reads over TCP need the token, the Unix socket does not.
start_pflexd --read-auth true
api_noauth GET /v1/gpus
expect_error 401 "" "GET /v1/gpus without a token under read_auth"
api GET /v1/gpus
expect_code 200 "GET /v1/gpus with the token"
api_unix GET /v1/gpus
expect_code 200 "GET over the Unix socket under read_auth"
stop_pflexd TERM

# start-up refusals: exit 1 (or 2 for usage), nothing listening, a reason.
refuse() { # EXPECTED_RC PATTERN ARGS...
  local want=$1 pat=$2 rc=0
  shift 2
  "$PFLEXD" --backend nvml --listen 127.0.0.1:0 --state-dir "$STATE" --socket "$T/run/r.sock" \
    --statsd "" "$@" > "$T/refused.log" 2>&1 || rc=$?
  expect_eq "$rc" "$want" "exit status for $*"
  grep -q "$pat" "$T/refused.log" || fail "for $*: expected '$pat' in: $(cat "$T/refused.log")"
}
cp "$T/token" "$T/token.644" && chmod 644 "$T/token.644"
refuse 1 "refusing token file.*other users read it" --token-file "$T/token.644"
ln -s "$T/token" "$T/token.link"
refuse 1 "symbolic link" --token-file "$T/token.link"
: > "$T/token.empty" && chmod 600 "$T/token.empty"
refuse 1 "empty" --token-file "$T/token.empty"
refuse 1 "No such file" --token-file "$T/no-token"
refuse 2 "unknown option" --token-file "$T/token" --bogus 1
refuse 2 "hz: '0' is not a number in 0.1-100" --token-file "$T/token" --hz 0
refuse 2 "read_auth: 'maybe' is not true or false" --token-file "$T/token" --read-auth maybe
printf '[pflexd]\nhz = 5\nlisten_tcp = 1\n' > "$T/bad.conf" && chmod 644 "$T/bad.conf"
refuse 2 "line 3: unknown key 'listen_tcp'" --token-file "$T/token" --config "$T/bad.conf"
printf 'hz = 5\n' > "$T/open.conf" && chmod 666 "$T/open.conf"
refuse 2 "refusing config file.*other users write it" --token-file "$T/token" --config "$T/open.conf"
refuse 2 "cannot open" --token-file "$T/token" --config "$T/missing.conf"
mkdir -p "$T/wide" && chmod 777 "$T/wide"
refuse 1 "state directory" --token-file "$T/token" --state-dir "$T/wide"
refuse 1 "only loopback" --token-file "$T/token" --statsd udp:0.0.0.0:8125

# A config file sets keys; the command line overrides them.
printf '# pflexd test\n[pflexd]\nhz = 4\nread_auth = true\n' > "$T/good.conf" && chmod 644 "$T/good.conf"
start_pflexd --config "$T/good.conf" --read-auth false
grep -q ', 4 Hz$' "$LOG" || fail "hz from the config file: $(cat "$LOG")"
api_noauth GET /v1/gpus
expect_code 200 "read_auth from the config file overridden by the command line"
stop_pflexd TERM
echo "agent_health: ok"
