# Two 'pflex cap set' at once (issue 8 item 4): the second waits for the
# restore lock and then reads the limits the first one left (its "before"
# values are read under the lock); with a short lock timeout it is told the
# truth: another pflex holds the restore lock, not "held by a sweep".
source "$(dirname "$0")/nvml_common.bash"
fake_state 2
fake_set gpu0.set_delay_ms 1500   # a slow driver: the first command holds the lock a while
"$PFLEX" cap set --gpus 0,1 --watts 450 >"$T/a.out" 2>&1 &
a=$!
# Wait until the first has recorded both GPUs (it holds the lock from there).
for _ in $(seq 200); do grep -q GPU-fake-0000-0000-0000-000000000001 "$PFLEX_STATE_DIR/restore.json" 2>/dev/null && break; sleep 0.02; done
set +e
msg=$(PFLEX_LOCK_TIMEOUT_S=0.2 "$PFLEX" cap set --gpus 0,1 --watts 300 2>&1); rc=$?
set -e
echo "$msg"
expect_eq "$rc" 1 "the loser with a short lock timeout"
echo "$msg" | grep >/dev/null "another pflex process holds the restore lock" || fail "lock not said: $msg"
echo "$msg" | grep >/dev/null "held by" && fail "blamed on a sweep: $msg"
# The second one, patient, runs after the first and reports what it found.
out=$("$PFLEX" cap set --gpus 0,1 --watts 300 2>&1) || fail "the second cap set failed: $out"
echo "$out"
wait "$a" || fail "the first cap set failed: $(cat "$T/a.out")"
grep >/dev/null "GPU 1: power limit 700.0 W -> 450.0 W" "$T/a.out" || fail "first: $(cat "$T/a.out")"
echo "$out" | grep >/dev/null "GPU 0: power limit 450.0 W -> 300.0 W" || fail "before-value of GPU 0 not the first command's"
echo "$out" | grep >/dev/null "GPU 1: power limit 450.0 W -> 300.0 W" || fail "before-value of GPU 1 not the first command's"
expect_eq "$(fake_get gpu0.limit_mw)" 300000 "GPU 0"
expect_eq "$(fake_get gpu1.limit_mw)" 300000 "GPU 1"
"$PFLEX" cap restore >/dev/null
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 restored to the true original"
expect_eq "$(fake_get gpu1.limit_mw)" 700000 "GPU 1 restored to the true original"
echo "nvml_concurrent: ok"
