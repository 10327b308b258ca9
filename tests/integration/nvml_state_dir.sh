# A state directory another user could write is refused (issue 8 item 4), as
# sshd's StrictModes refuses such a home: group/world-writable, owned by
# another user, or under a non-sticky directory others may write. The reason
# is said; nothing is recorded or changed. Lock and record files are never
# opened through a symlink.
source "$(dirname "$0")/nvml_common.bash"
fake_state 1
refused() { # DIR WHY: cap set with --state-dir DIR is refused saying WHY
  set +e
  msg=$("$PFLEX" cap set --gpus 0 --watts 400 --state-dir "$1" 2>&1); rc=$?
  set -e
  echo "$msg"
  expect_eq "$rc" 1 "cap set with state dir $1"
  echo "$msg" | grep >/dev/null -- "$2" || fail "reason for $1: $msg"
  expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 with state dir $1"
  [ -z "$(fake_get gpu0.set_count)" ] || fail "a set call happened with state dir $1"
  [ ! -e "$1/restore.json" ] || fail "a record was written into $1"
}
mkdir "$T/ww"; chmod 0777 "$T/ww"
refused "$T/ww" "refusing the restore state directory '$T/ww': '$T/ww' is writable by its group or others (mode 0777)"
mkdir "$T/gw"; chmod 0775 "$T/gw"
refused "$T/gw" "writable by its group or others (mode 0775)"
mkdir -p "$T/pub/state"; chmod 0777 "$T/pub"   # the directory above is open
refused "$T/pub/state" "'$T/pub' is writable by its group or others"
# The same through the environment.
set +e
msg=$(PFLEX_STATE_DIR="$T/ww" "$PFLEX" cap restore 2>&1); rc=$?
set -e
expect_eq "$rc" 1 "cap restore with PFLEX_STATE_DIR world-writable"
echo "$msg" | grep >/dev/null "writable by its group or others" || fail "env state dir: $msg"
if [ "$(id -u)" = 0 ]; then
  mkdir "$T/theirs"; chown 65534:65534 "$T/theirs"
  refused "$T/theirs" "'$T/theirs' is owned by uid 65534, neither root nor you (uid 0)"
fi
# A symlinked lock or record file is not followed.
mkdir "$T/s"; : > "$T/victim"
ln -s "$T/victim" "$T/s/restore.lock"
refused "$T/s" "Too many levels of symbolic links"
rm "$T/s/restore.lock"; ln -s "$T/victim" "$T/s/restore.json"
set +e
msg=$("$PFLEX" cap set --gpus 0 --watts 400 --state-dir "$T/s" 2>&1); rc=$?
set -e
expect_eq "$rc" 1 "cap set with restore.json a symlink"
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 with restore.json a symlink"
[ -L "$T/s/restore.json" ] && [ ! -s "$T/victim" ] || fail "the symlink's target was written"
# Control: a private directory under the sticky /tmp works.
mkdir "$T/ok"; chmod 0700 "$T/ok"
"$PFLEX" cap set --gpus 0 --watts 400 --state-dir "$T/ok" >/dev/null
expect_eq "$(fake_get gpu0.limit_mw)" 400000 "GPU 0 with a private state dir"
"$PFLEX" cap restore --state-dir "$T/ok" >/dev/null
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 restored"
echo "nvml_state_dir: ok"
