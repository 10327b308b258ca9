# A change waits for another pflex process's restore lock, but not forever:
# with the lock held elsewhere, cap set gives up with a clear error after
# PFLEX_LOCK_TIMEOUT_S and changes nothing; once the lock is free it works.
source "$(dirname "$0")/nvml_common.bash"
fake_state 2
command -v flock >/dev/null || fail "flock (util-linux) is missing: run scripts/install-deps.sh"

mkdir -p "$PFLEX_STATE_DIR"
touch "$PFLEX_STATE_DIR/restore.lock"
# The holder keeps the lock until the file 'release' appears.
( flock 9 && touch "$T/locked" && while [ ! -e "$T/release" ]; do sleep 0.05; done ) 9>"$PFLEX_STATE_DIR/restore.lock" &
holder=$!
for _ in $(seq 200); do [ -e "$T/locked" ] && break; sleep 0.05; done
[ -e "$T/locked" ] || fail "the lock holder did not start"
start=$(date +%s.%N)
set +e
PFLEX_LOCK_TIMEOUT_S=1 "$PFLEX" cap set --gpus 0 --watts 450 >"$T/out.txt" 2>"$T/err.txt"
rc=$?
set -e
end=$(date +%s.%N)
[ "$rc" -eq 1 ] || fail "cap set with the lock held: exit $rc, expected 1: $(cat "$T/err.txt")"
grep >/dev/null "another pflex process holds the restore lock" "$T/err.txt" || fail "lock message: $(cat "$T/err.txt")"
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 changed without the lock"
awk -v a="$start" -v b="$end" 'BEGIN { exit !(b - a >= 0.9 && b - a < 4.5) }' ||
  fail "waited $start..$end, expected about 1 s"
touch "$T/release"
wait "$holder"

"$PFLEX" cap set --gpus 0 --watts 450 >/dev/null
expect_eq "$(fake_get gpu0.limit_mw)" 450000 "GPU 0 after the lock was freed"
"$PFLEX" cap restore >/dev/null
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 restored"
echo "nvml_lock: ok"
