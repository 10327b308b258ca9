# Limits come back on every exit path of a sweep: SIGINT, SIGTERM, the
# command crashing or failing, a GPU lost mid-sweep; and after kill -9,
# `pflex cap restore` brings every GPU back (asserted from the fake's state).
source "$(dirname "$0")/nvml_common.bash"
cd "$T"
N=3
JOB='while true; do echo "tokens_per_second: 1000"; sleep 0.05; done'

# wait_cap V: wait (up to 10 s) until every GPU's limit is V mW.
wait_cap() {
  for _ in $(seq 200); do
    local all=1 i
    for ((i = 0; i < N; i++)); do [ "$(fake_get gpu$i.limit_mw)" = "$1" ] || all=0; done
    [ $all = 1 ] && return 0
    sleep 0.05
  done
  fail "limits never reached $1"
}
all_restored() {
  local i
  for ((i = 0; i < N; i++)); do expect_eq "$(fake_get gpu$i.limit_mw)" 700000 "$1: GPU $i"; done
}

for sig in INT TERM; do
  fake_state $N
  "$PFLEX" sweep --gpus 0-2 --caps 300,700 --hz 10 --duration 30 --pause 0 --quiet -- sh -c "$JOB" >/dev/null 2>err.txt &
  pid=$!
  wait_cap 300000
  kill -$sig $pid
  set +e; wait $pid; rc=$?; set -e
  # Re-raised: the shell sees death by the signal (128 + number).
  expect_eq "$rc" $((128 + $(kill -l $sig))) "exit status after SIG$sig"
  grep >/dev/null "restored 3 GPUs to their original limits" err.txt || { cat err.txt; fail "SIG$sig: restore not reported"; }
  all_restored "after SIG$sig"
done

# The command crashes (killed by a signal) during the first run.
fake_state $N
set +e
"$PFLEX" sweep --gpus 0-2 --caps 300,700 --hz 10 --duration 30 --pause 0 --quiet -- \
  sh -c 'echo "tokens_per_second: 10"; sleep 0.3; kill -SEGV $$' >/dev/null 2>err.txt; rc=$?
set -e
cat err.txt
expect_eq "$rc" 1 "exit status after a crashing command"
grep >/dev/null "sweep stopped: the command died of signal 11" err.txt || fail "crash not reported"
all_restored "after a crash"

# The command fails (exit 3).
fake_state $N
set +e
"$PFLEX" sweep --gpus 0-2 --caps 300,700 --hz 10 --duration 30 --pause 0 --quiet -- sh -c 'sleep 0.2; exit 3' >/dev/null 2>err.txt; rc=$?
set -e
expect_eq "$rc" 1 "exit status after a failing command"
grep >/dev/null "exited with status 3 during the 300 W run" err.txt || fail "failure not reported"
all_restored "after a failing command"

# GPU 1 falls off the bus mid-sweep (after 40 NVML calls on it, during the
# first run): the sweep stops, GPUs 0 and 2 come back, GPU 1's record is kept;
# once it is back, `pflex cap restore` restores it.
fake_state $N
fake_set gpu1.lost_after 40
set +e
"$PFLEX" sweep --gpus 0-2 --caps 300,700 --hz 10 --duration 30 --pause 0 --quiet -- sh -c "$JOB" >/dev/null 2>err.txt; rc=$?
set -e
cat err.txt
expect_eq "$rc" 1 "exit status with a lost GPU"
grep >/dev/null "sweep stopped: reading GPU 1 during the 300 W run failed: No such device" err.txt || fail "lost GPU not reported"
grep >/dev/null "GPU 1 (GPU-fake-0000-0000-0000-000000000001) could not be restored to 700.0 W" err.txt || fail "unrestored GPU not named"
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 after the loss"
expect_eq "$(fake_get gpu2.limit_mw)" 700000 "GPU 2 after the loss"
expect_eq "$(fake_get gpu1.limit_mw)" 300000 "GPU 1 still capped while lost"
grep >/dev/null '"GPU-fake-0000-0000-0000-000000000001"' "$PFLEX_STATE_DIR/restore.json" || fail "record of the lost GPU dropped"
sed -i '/^gpu1.lost_after=/d' "$FAKE_NVML_STATE"
"$PFLEX" cap restore | grep >/dev/null "GPU 1 .*300.0 W -> 700.0 W (original), record cleared" || fail "later restore"
all_restored "after the GPU came back"

# kill -9 during a sweep: nothing in pflex runs, the records stay on disk,
# and `pflex cap restore` brings every GPU back.
fake_state $N
"$PFLEX" sweep --gpus 0-2 --caps 250,700 --hz 10 --duration 30 --pause 0 --quiet -- sh -c "$JOB" >/dev/null 2>&1 &
pid=$!
wait_cap 250000
kill -9 $pid
set +e; wait $pid; set -e
for ((i = 0; i < N; i++)); do expect_eq "$(fake_get gpu$i.limit_mw)" 250000 "GPU $i capped after kill -9"; done
"$PFLEX" cap restore > out.txt
cat out.txt
expect_eq "$(grep -c 'record cleared' out.txt)" $N "GPUs restored after kill -9"
all_restored "after kill -9 and cap restore"
echo "sweep_exit_paths: ok"
