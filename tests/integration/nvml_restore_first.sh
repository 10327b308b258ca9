# Proof that no limit changes before its restore record is durable.
#
# The fake NVML's set call, with FAKE_NVML_RESTORE_CHECK, reads the restore
# file and refuses (recording a violation) unless that GPU's UUID is in it.
# 1. the check is sensitive: pointed at another file, a set is caught;
# 2. every pflex path that sets limits (cap set, cap set --clamp, sweep) passes it;
# 3. when the record cannot be written (state dir is a file; restore.json cannot
#    be replaced), no set call reaches the driver at all.
source "$(dirname "$0")/nvml_common.bash"
fake_state 2

# 1. Negative control: the check watches a file pflex does not write.
: > "$T/other.json"
set +e
FAKE_NVML_RESTORE_CHECK="$T/other.json" "$PFLEX" cap set --gpus 0 --watts 400 2>"$T/err"; rc=$?
set -e
expect_eq "$rc" 1 "set against the wrong restore file"
grep >/dev/null "fake-nvml: VIOLATION" "$T/err" || fail "the fake's check did not fire"
expect_eq "$(fake_get gpu0.violation)" 1 "violation recorded"
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "limit after violation"
fake_state 2
rm -rf "$PFLEX_STATE_DIR"

# 2. Every path that sets limits.
export FAKE_NVML_RESTORE_CHECK="$PFLEX_STATE_DIR/restore.json"
"$PFLEX" cap set --gpus 0,1 --watts 400 >/dev/null
"$PFLEX" cap set --gpus 1 --watts 100 --clamp >/dev/null
expect_eq "$(fake_get gpu0.limit_mw)" 400000 "GPU 0 set"
expect_eq "$(fake_get gpu1.limit_mw)" 200000 "GPU 1 clamped"
"$PFLEX" cap restore >/dev/null
if "$PFLEX" help sweep >/dev/null 2>&1; then
  "$PFLEX" sweep --gpus 0,1 --caps 300,700 --hz 10 --duration 0.3 --pause 0 \
    --out "$T/runs.csv" --group restore-first -- sh -c 'sleep 5' >/dev/null 2>&1 || true
  # after the sweep the limits are back and nothing was set without a record
  expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 after sweep"
  [ "$(fake_get gpu0.set_count)" -ge 4 ] || fail "the sweep did not set limits"
fi
[ -z "$(fake_get gpu0.violation)" ] || fail "a limit changed before its record (GPU 0)"
[ -z "$(fake_get gpu1.violation)" ] || fail "a limit changed before its record (GPU 1)"

# 3a. The state directory cannot be created: no set call at all.
fake_state 2
: > "$T/not-a-dir"
set +e
msg=$(PFLEX_STATE_DIR="$T/not-a-dir" "$PFLEX" cap set --gpus 0 --watts 400 2>&1); rc=$?
set -e
echo "$msg"
expect_eq "$rc" 1 "set without a usable state dir"
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "limit with no state dir"
[ -z "$(fake_get gpu0.set_count)" ] || fail "set called without a record"

# 3b. The restore file is corrupt: pflex will not guess, and changes nothing.
rm -rf "$T/s2"; mkdir -p "$T/s2"; echo '{"records": [' > "$T/s2/restore.json"
set +e
msg=$(PFLEX_STATE_DIR="$T/s2" "$PFLEX" cap set --gpus 0 --watts 400 2>&1); rc=$?
set -e
expect_eq "$rc" 1 "set with a corrupt restore file"
echo "$msg" | grep >/dev/null "cannot record the original limits in .*; no limit was changed" || fail "corrupt file: $msg"
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 with a corrupt restore file"

# 3c. fsync or rename of the restore file fails (injected with an LD_PRELOAD
#     shim): the record is not durable, so no set call happens. Skipped in a
#     sanitizer build, where ASan must be the first preloaded library.
SHIM="$PFLEX_BINARY_DIR/tests/fake-nvml/libpflex-fault.so"
if ldd "$PFLEX" | grep >/dev/null libasan; then
  echo "skip 3c: sanitizer build"
else
  for fault in fsync rename; do
    rm -rf "$T/s3"
    mkdir "$T/s3"   # an existing directory: the fault hits the record's own write
    set +e
    msg=$(PFLEX_STATE_DIR="$T/s3" PFLEX_FAULT=$fault LD_PRELOAD="$SHIM" "$PFLEX" cap set --gpus 0,1 --watts 400 2>&1); rc=$?
    set -e
    echo "$msg"
    expect_eq "$rc" 1 "set with a failing $fault"
    echo "$msg" | grep >/dev/null "cannot record the original limits in .*Input/output error; no limit was changed" \
      || fail "$fault failure not reported"
    expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 with a failing $fault"
    expect_eq "$(fake_get gpu1.limit_mw)" 700000 "GPU 1 with a failing $fault"
    [ -z "$(fake_get gpu0.set_count)$(fake_get gpu1.set_count)" ] || fail "set called without a durable record ($fault)"
    [ -e "$T/s3/restore.json" ] && fail "restore.json exists although its write failed ($fault)"
    ls "$T/s3" | grep >/dev/null 'tmp' && fail "temporary file left behind ($fault)"
  done
  # A new state directory whose entry cannot be made durable (fsync of its
  # parent fails): nothing is recorded and nothing changes.
  rm -rf "$T/s3"
  set +e
  msg=$(PFLEX_STATE_DIR="$T/s3" PFLEX_FAULT=fsync LD_PRELOAD="$SHIM" "$PFLEX" cap set --gpus 0 --watts 400 2>&1); rc=$?
  set -e
  expect_eq "$rc" 1 "set with a new state directory that cannot be made durable"
  echo "$msg" | grep >/dev/null "cannot open the restore state directory .*Input/output error" || fail "new dir: $msg"
  [ -z "$(fake_get gpu0.set_count)" ] || fail "set called although the state directory is not durable"
  # Control: the same shim with no fault lets the set through.
  FAKE_NVML_RESTORE_CHECK="$T/s3/restore.json" PFLEX_STATE_DIR="$T/s3" LD_PRELOAD="$SHIM" "$PFLEX" cap set --gpus 0 --watts 400 >/dev/null
  expect_eq "$(fake_get gpu0.limit_mw)" 400000 "control without fault"
fi
echo "nvml_restore_first: ok"
