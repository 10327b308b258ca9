#!/usr/bin/env bash
# pflex-controller report reads its store and writes nothing to it: the
# file's bytes and mtime stay as they were and no -wal or -shm file is left,
# a read-only store file is reported, a running controller's store is read
# through its WAL, and a store of another schema is refused with what to do
# (an older one is not migrated by the report).
source "$(dirname "$0")/controller_common.bash"

umask 022
echo "agent-token-for-tests-0001" > "$T/atok"; chmod 600 "$T/atok"
echo "controller-token-for-tests-1" > "$T/ctok"; chmod 600 "$T/ctok"
echo "http://127.0.0.1:$(free_port)" > "$T/agents" # never answers: counted unreachable
CPORT=$(free_port)
mkdir "$T/s"
CTL_OPTS=(--listen "127.0.0.1:$CPORT" --token-file "$T/ctok" --agents-file "$T/agents"
  --agent-token-file "$T/atok" --state-db "$T/s/ctl.db" --round-s 0.2 --agent-timeout-s 0.1)
C="http://127.0.0.1:$CPORT"
AUTH="Authorization: Bearer $(cat "$T/ctok")"

start_ctl() {
  "$CTL" "${CTL_OPTS[@]}" > "$T/ctl.log" 2>&1 &
  CTLPID=$!
  PIDS+=("$CTLPID")
  wait_until 10 curl -sf "$C/v1/health" || fail "controller did not start: $(cat "$T/ctl.log")"
}
rounds() { [ "$("$CTL" report "$id" --state-db "$T/s/ctl.db" | jq '.rounds')" -ge "$1" ]; }

# A store with one event and some rounds, left by a controller stopped cleanly.
start_ctl
id=$(curl -sf -X POST "$C/v1/events" -H "$AUTH" -d '{"target_w":1000,"start":"now","duration_s":60}' | jq -e '.id')
# While it runs, the report reads the rounds in its WAL.
[ -e "$T/s/ctl.db-wal" ] || fail "the running controller's store has no -wal file"
wait_until 10 rounds 3 || fail "report of the live store: fewer than 3 rounds: $("$CTL" report "$id" --state-db "$T/s/ctl.db" 2>&1)"
kill -TERM "$CTLPID"; wait "$CTLPID" || fail "controller exit $? on SIGTERM"
[ ! -e "$T/s/ctl.db-wal" ] && [ ! -e "$T/s/ctl.db-shm" ] || fail "the stopped controller left $(ls "$T/s")"

# state: the store's bytes and mtime, and what else is in its directory.
state() { echo "$(sha256sum < "$T/s/ctl.db") $(stat -c '%y %s' "$T/s/ctl.db") $(ls -a "$T/s" | tr '\n' ' ')"; }
before=$(state)
"$CTL" report "$id" --state-db "$T/s/ctl.db" --plot "$T/event.svg" > "$T/report.json" || fail "report failed"
jq -e '.event.id == '"$id"' and .rounds >= 3' "$T/report.json" > /dev/null || fail "report: $(cat "$T/report.json")"
expect_state() { [ "$(state)" = "$before" ] || fail "$1 changed the store: $before -> $(state)"; }
expect_state "report"
"$CTL" report "$((id + 1))" --state-db "$T/s/ctl.db" > /dev/null 2>&1 && fail "report of an unknown event succeeded"
expect_state "report of an unknown event"

# A store its reader cannot write (a file 0444 in a directory 0555, read by
# a user other than root, whom modes do not stop) is reported.
if [ "$(id -u)" = 0 ] && setpriv --reuid=nobody --regid=nogroup --clear-groups true 2>/dev/null; then
  chmod 711 "$T"; chmod 444 "$T/s/ctl.db"; chmod 555 "$T/s"
  before=$(state)
  setpriv --reuid=nobody --regid=nogroup --clear-groups "$CTL" report "$id" --state-db "$T/s/ctl.db" > "$T/ro.json" 2>&1 ||
    fail "report of a read-only store: $(cat "$T/ro.json")"
  cmp -s "$T/ro.json" "$T/report.json" || fail "read-only store: another report: $(cat "$T/ro.json")"
  expect_state "report of a read-only store"
  chmod 700 "$T"; chmod 755 "$T/s"; chmod 644 "$T/s/ctl.db"
else
  echo "note: not root or no setpriv: the read-only store is not checked"
fi

# schema SQL: sets the store's schema version (python3: no sqlite3 program needed).
schema() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("UPDATE meta SET value=? WHERE key=?", (sys.argv[2],"schema")); c.commit(); c.close()' "$T/s/ctl.db" "$1"; }
refused() { # VERSION TEXT
  local out rc=0
  schema "$1"
  before=$(state)
  out=$("$CTL" report "$id" --state-db "$T/s/ctl.db" 2>&1) || rc=$?
  [ "$rc" = 1 ] && echo "$out" | grep -qF "error: '$T/s/ctl.db': $2" || fail "schema $1: exit $rc: $out"
  expect_state "report of a schema $1 store"
}
refused 1 "schema version 1 is older than this controller's 3; start pflex-controller once on it (state_db) to migrate it, then report"
refused 2 "schema version 2 is older than this controller's 3; start pflex-controller once on it (state_db) to migrate it, then report"
refused 99 "schema version 99 is newer than this controller's 3"
schema 3
echo "ok: controller_report"
