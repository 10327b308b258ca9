# A restore record with a missing or mistyped field (issue 8 item 4) is
# refused loudly and kept byte for byte: never skipped (the GPU would stay
# capped), truncated (a wrong "original"), or replaced by a new record that
# stores the capped limit as the original.
source "$(dirname "$0")/nvml_common.bash"
U0=GPU-fake-0000-0000-0000-000000000000
mkdir -p "$PFLEX_STATE_DIR"
# Each case: GPU 0 was capped to 450 W by an earlier pflex, its true original is 700 W.
cases=(
  "{\"uuid\":\"$U0\",\"index\":0,\"original_limit_mw\":700000,\"pid\":1,\"time\":0}|'backend' is missing"
  "{\"backend\":7,\"uuid\":\"$U0\",\"index\":0,\"original_limit_mw\":700000,\"pid\":1,\"time\":0}|'backend' is not a string"
  "{\"backend\":\"nvml\",\"uuid\":\"$U0\",\"index\":0,\"original_limit_mw\":4295667296,\"pid\":1,\"time\":0}|'original_limit_mw' is 4295667296, outside"
  "{\"backend\":\"nvml\",\"uuid\":\"$U0\",\"index\":-1,\"original_limit_mw\":700000,\"pid\":1,\"time\":0}|'index' is -1, outside"
)
for c in "${cases[@]}"; do
  rec=${c%%|*}; why=${c#*|}
  fake_state 2
  fake_set gpu0.limit_mw 450000
  printf '{"format":"pflex-restore","version":1,"records":[%s]}\n' "$rec" > "$PFLEX_STATE_DIR/restore.json"
  cp "$PFLEX_STATE_DIR/restore.json" "$T/before.json"

  # cap restore: refused loudly, record kept, GPU not touched.
  set +e
  msg=$("$PFLEX" cap restore 2>&1); rc=$?
  set -e
  echo "$msg"
  expect_eq "$rc" 1 "cap restore with a malformed record ($why)"
  echo "$msg" | grep >/dev/null "record 1: $why" || fail "the malformed field is not named ($why): $msg"
  cmp -s "$T/before.json" "$PFLEX_STATE_DIR/restore.json" || fail "restore.json rewritten by cap restore ($why)"

  # cap set on that GPU: refused, nothing changed, the true original not lost.
  set +e
  msg=$("$PFLEX" cap set --gpus 0 --watts 300 2>&1); rc=$?
  set -e
  echo "$msg"
  expect_eq "$rc" 1 "cap set over a malformed record ($why)"
  echo "$msg" | grep >/dev/null "record 1: $why" || fail "cap set does not say why ($why): $msg"
  expect_eq "$(fake_get gpu0.limit_mw)" 450000 "GPU 0 changed over a malformed record ($why)"
  cmp -s "$T/before.json" "$PFLEX_STATE_DIR/restore.json" || fail "restore.json rewritten by cap set ($why)"

  # Another GPU can still be capped; the malformed record stays as it was.
  "$PFLEX" cap set --gpus 1 --watts 300 >/dev/null
  expect_eq "$(fake_get gpu1.limit_mw)" 300000 "GPU 1 ($why)"
  python3 - "$PFLEX_STATE_DIR/restore.json" "$rec" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert recs[0] == json.loads(sys.argv[2]), recs[0]
assert [r.get("uuid") for r in recs[1:]] == ["GPU-fake-0000-0000-0000-000000000001"], recs
PY
  set +e; "$PFLEX" cap restore >/dev/null 2>&1; set -e
  expect_eq "$(fake_get gpu1.limit_mw)" 700000 "GPU 1 restored beside a malformed record ($why)"
  expect_eq "$(fake_get gpu0.limit_mw)" 450000 "GPU 0 left alone ($why)"
done
echo "nvml_malformed: ok"
