# kill -9 in the middle of writing restore.json (issue 8 item 4) leaves a
# restore.json.tmp.* file; the next pflex that takes the restore lock removes
# it. The kill comes from the LD_PRELOAD shim inside fsync of the temporary
# file, the worst moment; skipped in a sanitizer build.
source "$(dirname "$0")/nvml_common.bash"
SHIM="$PFLEX_BINARY_DIR/tests/fake-nvml/libpflex-fault.so"
if ldd "$PFLEX" | grep >/dev/null libasan; then echo "skip: sanitizer build"; exit 0; fi
fake_state 2
mkdir -p "$PFLEX_STATE_DIR"
set +e
PFLEX_FAULT=fsync=KILL PFLEX_FAULT_PATH=restore.json LD_PRELOAD="$SHIM" "$PFLEX" cap set --gpus 0,1 --watts 400 >/dev/null 2>&1; rc=$?
set -e
expect_eq "$rc" 137 "cap set killed with SIGKILL"
ls "$PFLEX_STATE_DIR" | grep >/dev/null '^restore\.json\.tmp\.' || fail "no temporary file: the kill came too late to test anything"
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 after the kill"
[ -e "$PFLEX_STATE_DIR/restore.json" ] && fail "a record appeared although its write was killed"
"$PFLEX" cap restore >/dev/null
ls "$PFLEX_STATE_DIR" | grep >/dev/null '^restore\.json\.tmp\.' && fail "stale temporary file not removed: $(ls "$PFLEX_STATE_DIR")"
"$PFLEX" cap set --gpus 0 --watts 400 >/dev/null
expect_eq "$(fake_get gpu0.limit_mw)" 400000 "GPU 0 set after the cleanup"
"$PFLEX" cap restore >/dev/null
echo "nvml_stale_tmp: ok"
