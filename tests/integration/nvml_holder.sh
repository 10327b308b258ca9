# "Held by a running sweep" is the holder's own lock, not a pid and a name
# (issue 8 item 4): a process that wins a dead sweep's pid, even one named
# pflex-something, does not block root's 'cap restore'; a sweep killed with
# kill -9 leaves its lock file unheld, so its GPUs are restored.
source "$(dirname "$0")/nvml_common.bash"
fake_state 2
cd "$T"
# A sweep that dies by kill -9 while it has GPU 0 capped.
"$PFLEX" sweep --gpus 0 --caps 300 --hz 10 --duration 30 --pause 0 --quiet \
  --out runs.csv -- sleep 60 >sweep.out 2>&1 &
sweep=$!
for _ in $(seq 200); do [ "$(fake_get gpu0.limit_mw)" = 300000 ] && break; sleep 0.05; done
expect_eq "$(fake_get gpu0.limit_mw)" 300000 "GPU 0 under the sweep"
kill -9 "$sweep"; wait "$sweep" 2>/dev/null || true   # its command dies with it (PDEATHSIG)
# An unprivileged process named like pflex now runs under the sweep's pid
# (simulated: the record is pointed at its pid, as pid reuse would do).
cp "$(command -v sleep)" "$T/pflex-squatter"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  setpriv --reuid=65534 --regid=65534 --clear-groups "$T/pflex-squatter" 30 &
else
  "$T/pflex-squatter" 30 &
fi
squatter=$!
trap 'kill $squatter 2>/dev/null || true; rm -rf "$T"' EXIT
for _ in $(seq 100); do [ "$(cat /proc/$squatter/comm 2>/dev/null)" = pflex-squatter ] && break; sleep 0.05; done
[ "$(cat /proc/$squatter/comm)" = pflex-squatter ] || fail "the squatter is not running"
python3 - "$PFLEX_STATE_DIR/restore.json" "$squatter" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["records"]: r["pid"] = int(sys.argv[2])
json.dump(d, open(sys.argv[1], "w"))
PY
out=$("$PFLEX" cap restore 2>&1) || fail "cap restore refused after the sweep died: $out"
echo "$out"
echo "$out" | grep >/dev/null "GPU 0 .*300.0 W -> 700.0 W (original), record cleared" || fail "GPU 0 not restored"
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 after cap restore"
ls "$PFLEX_STATE_DIR" | grep >/dev/null '^holder-' && fail "the dead sweep's lock file was not removed"
kill "$squatter" 2>/dev/null || true
echo "nvml_holder: ok"
