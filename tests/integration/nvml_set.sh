# pflex cap set / get / restore against the fake NVML: the limit changes,
# the original is recorded first, and restore brings it back.
source "$(dirname "$0")/nvml_common.bash"
fake_state 3

out=$("$PFLEX" cap set --gpus 0,1 --watts 450)
echo "$out"
echo "$out" | grep >/dev/null "GPU 0: power limit 700.0 W -> 450.0 W" || fail "GPU 0 change not announced"
echo "$out" | grep >/dev/null "GPU 1: power limit 700.0 W -> 450.0 W" || fail "GPU 1 change not announced"
expect_eq "$(fake_get gpu0.limit_mw)" 450000 "GPU 0 limit"
expect_eq "$(fake_get gpu1.limit_mw)" 450000 "GPU 1 limit"
expect_eq "$(fake_get gpu2.limit_mw)" 700000 "GPU 2 untouched"
grep >/dev/null '"GPU-fake-0000-0000-0000-000000000000"' "$PFLEX_STATE_DIR/restore.json" || fail "no record of GPU 0"
grep >/dev/null '"GPU-fake-0000-0000-0000-000000000002"' "$PFLEX_STATE_DIR/restore.json" && fail "record of an untouched GPU"

# A second change keeps the first original (700 W), not 450 W.
"$PFLEX" cap set --gpus 1 --watts 300 >/dev/null
expect_eq "$(fake_get gpu1.limit_mw)" 300000 "GPU 1 limit after second set"
"$PFLEX" cap get --json | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g[1]["limit_w"] == 300.0 and g[1]["original_limit_w"] == 700.0, g[1]
assert g[0]["original_limit_w"] == 700.0 and "original_limit_w" not in g[2], g'

# --dry-run changes nothing.
"$PFLEX" cap set --gpus 2 --watts 500 --dry-run | grep >/dev/null "dry run" || fail "dry run not said"
expect_eq "$(fake_get gpu2.limit_mw)" 700000 "dry run changed GPU 2"

# Restore only GPU 0, then everything.
"$PFLEX" cap restore --gpus 0 | grep >/dev/null "GPU 0 .*450.0 W -> 700.0 W" || fail "restore of GPU 0"
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 restored"
expect_eq "$(fake_get gpu1.limit_mw)" 300000 "GPU 1 still capped"
"$PFLEX" cap restore
expect_eq "$(fake_get gpu1.limit_mw)" 700000 "GPU 1 restored"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["records"] == []' "$PFLEX_STATE_DIR/restore.json"
"$PFLEX" cap restore | grep >/dev/null "nothing to restore" || fail "second restore"

# Restore finds a GPU by UUID even when its index changed (e.g. after a reboot).
"$PFLEX" cap set --gpus 0 --watts 400 >/dev/null
sed -i 's/^gpu0\.uuid=.*/gpu0.uuid=GPU-fake-swapped-a/; s/^gpu2\.uuid=.*/gpu2.uuid=GPU-fake-0000-0000-0000-000000000000/' "$FAKE_NVML_STATE"
fake_set gpu2.limit_mw 400000
"$PFLEX" cap restore | grep >/dev/null "GPU 2 (GPU-fake-0000-0000-0000-000000000000): power limit 400.0 W -> 700.0 W" \
  || fail "restore by UUID"
expect_eq "$(fake_get gpu2.limit_mw)" 700000 "GPU found by UUID restored"
# A limit someone else changed after pflex set it is left alone, unless --force.
"$PFLEX" cap set --gpus 1 --watts 450 >/dev/null
fake_set gpu1.limit_mw 350000
set +e
msg=$("$PFLEX" cap restore 2>&1); rc=$?
set -e
echo "$msg"
expect_eq "$rc" 1 "restore over an operator's change"
echo "$msg" | grep >/dev/null "GPU 1 .*its limit is 350.0 W, neither the original 700.0 W nor the 450.0 W pflex set" \
  || fail "operator's change not explained"
expect_eq "$(fake_get gpu1.limit_mw)" 350000 "operator's limit kept"
"$PFLEX" cap restore --force | grep >/dev/null "GPU 1 .*350.0 W -> 700.0 W" || fail "restore --force"
expect_eq "$(fake_get gpu1.limit_mw)" 700000 "GPU 1 after --force"
echo "nvml_set: ok"
