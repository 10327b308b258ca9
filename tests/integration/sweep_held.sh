# While a sweep runs, its GPUs are its own: 'pflex cap set' and 'pflex cap
# restore' from another process refuse to touch them (they would corrupt its
# runs, and the sweep restores them itself when it ends); other GPUs are free.
source "$(dirname "$0")/nvml_common.bash"
fake_state 2
cd "$T"
"$PFLEX" sweep --gpus 0 --caps 300 --hz 10 --duration 4 --pause 0 --quiet --sustain 0.1 \
  --out runs.csv -- sleep 30 >sweep.out 2>&1 &
sweep=$!
for _ in $(seq 100); do [ "$(fake_get gpu0.limit_mw)" = 300000 ] && break; sleep 0.05; done
expect_eq "$(fake_get gpu0.limit_mw)" 300000 "GPU 0 under the sweep"

set +e
msg=$("$PFLEX" cap set --gpus 0 --watts 450 2>&1); rc=$?
set -e
expect_eq "$rc" 1 "cap set on a GPU held by a running sweep"
echo "$msg" | grep >/dev/null "held by another running pflex process" || fail "reason: $msg"
expect_eq "$(fake_get gpu0.limit_mw)" 300000 "GPU 0 changed under the sweep"

set +e
msg=$("$PFLEX" cap restore 2>&1); rc=$?
set -e
expect_eq "$rc" 1 "cap restore of a GPU held by a running sweep"
echo "$msg" | grep >/dev/null "held by another running pflex process" || fail "restore reason: $msg"
expect_eq "$(fake_get gpu0.limit_mw)" 300000 "GPU 0 restored under the sweep"

"$PFLEX" cap set --gpus 1 --watts 450 >/dev/null   # not the sweep's: free
expect_eq "$(fake_get gpu1.limit_mw)" 450000 "GPU 1"

wait "$sweep" || true   # no throughput from 'sleep': the sweep may fail, but restores
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 after the sweep ended"
"$PFLEX" cap restore >/dev/null
expect_eq "$(fake_get gpu1.limit_mw)" 700000 "GPU 1 restored"
echo "sweep_held: ok"
