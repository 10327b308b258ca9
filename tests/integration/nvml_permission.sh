# Permission denied (not root, no CAP_SYS_ADMIN): the error says what is needed
# and the limit stays; lost GPUs are reported as such.
source "$(dirname "$0")/nvml_common.bash"
fake_state 2
fake_set gpu0.fail.set_limit no_permission

set +e
msg=$("$PFLEX" cap set --gpus 0 --watts 400 2>&1); rc=$?
set -e
echo "$msg"
expect_eq "$rc" 1 "exit status without permission"
echo "$msg" | grep >/dev/null "error: cannot set the power limit of GPU 0: Operation not permitted" || fail "permission error"
echo "$msg" | grep >/dev/null "root or CAP_SYS_ADMIN" || fail "permission hint"
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "limit unchanged"

# The refused set took back the record it wrote first: nothing is left for a
# later 'cap restore' to undo (issue 8: rolled-back records).
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["records"]; assert r == [], r' \
  "$PFLEX_STATE_DIR/restore.json"
"$PFLEX" cap restore | grep >/dev/null "nothing to restore" || fail "restore after refusal"

# A GPU that fell off the bus.
fake_set gpu1.fail gpu_lost
set +e
msg=$("$PFLEX" gpus 2>&1); rc=$?
set -e
echo "$msg"
expect_eq "$rc" 1 "exit status with a lost GPU"
echo "$msg" | grep >/dev/null "^0 .*GPU-fake-0000-0000-0000-000000000000" || fail "GPU 0 still listed"
echo "$msg" | grep >/dev/null "error: cannot read GPU 1: No such device .*GPU is lost.*fallen off the bus" || fail "lost-GPU message"
# Not root: reading shows the recorded originals (the lock file is opened
# read-only), changing says what is needed and changes nothing. Runs where
# the test itself is root and can drop to nobody with setpriv.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  fake_state 2
  "$PFLEX" cap set --gpus 1 --watts 450 >/dev/null
  chmod 755 "$T"; chmod 644 "$FAKE_NVML_STATE"
  nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
  nobody "$PFLEX" cap get --json | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g[1]["original_limit_w"] == 700.0 and g[1]["limit_w"] == 450.0, g'
  set +e
  msg=$(nobody "$PFLEX" cap set --gpus 0 --watts 400 2>&1); rc=$?
  set -e
  echo "$msg"
  expect_eq "$rc" 1 "cap set as nobody"
  echo "$msg" | grep >/dev/null "Permission denied; no limit was changed (changing limits needs root or CAP_SYS_ADMIN" \
    || fail "non-root hint"
  expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 unchanged by nobody"
else
  echo "note: not root or no setpriv: the non-root checks did not run"
fi
echo "nvml_permission: ok"
