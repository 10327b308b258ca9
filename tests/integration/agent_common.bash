# Shared helpers of the agent_*.sh integration tests (sourced; the .bash
# suffix keeps it out of the test glob). Builds on nvml_common.bash (a temp
# dir $T, the fake NVML, fake_state/fake_get/fail/expect_eq) and starts
# pflexd in the foreground exactly as the checks of issue 9 do:
#   pflexd --backend B --listen 127.0.0.1:PORT --token-file F --state-dir D [--hz N]
# plus a Unix socket and a StatsD port inside $T. Every process started here
# is killed by the EXIT trap; every wait is bounded.
source "$(dirname "${BASH_SOURCE[0]}")/nvml_common.bash"

PFLEXD="$PFLEX_BINARY_DIR/pflexd"
[ -x "$PFLEXD" ] || { echo "missing $PFLEXD"; exit 1; }
command -v curl >/dev/null && command -v jq >/dev/null || { echo "needs curl and jq (scripts/install-deps.sh)"; exit 1; }

AGENT_PIDS=()
agent_cleanup() {
  local p
  for p in "${AGENT_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${AGENT_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$T"
}
trap agent_cleanup EXIT

TOKEN=tok-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf '%s\n' "$TOKEN" > "$T/token"
chmod 600 "$T/token"
STATE="$T/state"
SOCK="$T/run/pflexd.sock"
mkdir -p "$T/run"
chmod 755 "$T/run"

# start_pflexd [extra options...]: starts pflexd and waits (at most 10 s)
# until it serves; sets PID, PORT, URL, LOG.
start_pflexd() {
  LOG="$T/pflexd.$RANDOM.log"
  : > "$LOG"
  "$PFLEXD" --backend "${BACKEND:-nvml}" --listen 127.0.0.1:0 --token-file "$T/token" \
    --state-dir "$STATE" --socket "$SOCK" --statsd udp:127.0.0.1:0 "$@" > "$LOG" 2>&1 &
  PID=$!
  AGENT_PIDS+=("$PID")
  local i
  for ((i = 0; i < 200; i++)); do
    if grep -q '^note: pflexd .* GPU' "$LOG"; then
      PORT=$(sed -n 's/^note: listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$LOG" | head -n1)
      URL="http://127.0.0.1:$PORT"
      return 0
    fi
    kill -0 "$PID" 2>/dev/null || { cat "$LOG" >&2; fail "pflexd exited at start"; }
    sleep 0.05
  done
  cat "$LOG" >&2
  fail "pflexd did not start within 10 s"
}

# stop_pflexd [SIGNAL]: signals pflexd (TERM) and waits at most 10 s; sets RC.
# After SIGTERM the exit status must be 0 and no sanitizer may have spoken.
stop_pflexd() {
  kill -"${1:-TERM}" "$PID"
  local i
  for ((i = 0; i < 200; i++)); do
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.05
  done
  kill -0 "$PID" 2>/dev/null && fail "pflexd did not stop within 10 s"
  RC=0
  { wait "$PID"; } 2>/dev/null || RC=$?
  # Under ASan (build-asan) a leak or memory error shows here.
  ! grep -q 'Sanitizer' "$LOG" || { cat "$LOG" >&2; fail "sanitizer report from pflexd"; }
  [ "${1:-TERM}" != TERM ] || [ "$RC" = 0 ] || { cat "$LOG" >&2; fail "pflexd exited $RC after SIGTERM"; }
}

# api METHOD PATH [BODY] [curl options...]: over TCP with the token; sets
# CODE and BODY (the reply).
api() {
  local method=$1 path=$2 body=${3-}
  shift $(($# < 3 ? $# : 3))
  CODE=$(curl -s -o "$T/reply" -w '%{http_code}' -X "$method" --max-time 10 \
    -H "Authorization: Bearer $TOKEN" ${body:+--data-binary "$body"} "$@" "$URL$path")
  BODY=$(cat "$T/reply")
}
# api_noauth METHOD PATH [BODY] [curl options...]: over TCP, no token.
api_noauth() {
  local method=$1 path=$2 body=${3-}
  shift $(($# < 3 ? $# : 3))
  CODE=$(curl -s -o "$T/reply" -w '%{http_code}' -X "$method" --max-time 10 \
    ${body:+--data-binary "$body"} "$@" "$URL$path")
  BODY=$(cat "$T/reply")
}
# api_unix METHOD PATH [BODY]: over the Unix socket (no token).
api_unix() {
  local method=$1 path=$2 body=${3-}
  CODE=$(curl -s -o "$T/reply" -w '%{http_code}' -X "$method" --max-time 10 \
    --unix-socket "$SOCK" ${body:+--data-binary "$body"} "http://localhost$path")
  BODY=$(cat "$T/reply")
}

expect_code() { [ "$CODE" = "$1" ] || fail "$2: expected HTTP $1, got $CODE: $BODY"; }
# expect_error STATUS FIELD WHAT: a JSON error reply naming FIELD ("" = none).
expect_error() {
  expect_code "$1" "$3"
  echo "$BODY" | jq -e '.error | type == "string" and length > 0' >/dev/null || fail "$3: no error text: $BODY"
  [ "$(echo "$BODY" | jq -r '.field // ""')" = "$2" ] || fail "$3: expected field '$2': $BODY"
}
limit() { fake_get "gpu$1.limit_mw"; }
set_count() { fake_get "gpu$1.set_count" | grep . || echo 0; }
now_s() { date +%s.%N; }
