# A sweep refuses GPUs that already carry a restore record (an operator's
# 'pflex cap set', an interrupted sweep, or another sweep running now): its
# final restore would otherwise undo the operator's limit and clear the record.
source "$(dirname "$0")/nvml_common.bash"
fake_state 2
cd "$T"
"$PFLEX" cap set --gpus 1 --watts 450 >/dev/null
set +e
msg=$("$PFLEX" sweep --gpus 0,1 --caps 300,500 --hz 10 --duration 0.2 --pause 0 --quiet \
  --out runs.csv -- sleep 5 2>&1); rc=$?
set -e
echo "$msg"
expect_eq "$rc" 1 "exit status of a sweep over a recorded GPU"
echo "$msg" | grep >/dev/null "GPU 1 already has a recorded original limit (700.0 W" || fail "reason not given"
echo "$msg" | grep >/dev/null "pflex cap restore" || fail "remedy not given"
expect_eq "$(fake_get gpu0.set_count)" "" "GPU 0 touched"
expect_eq "$(fake_get gpu1.limit_mw)" 450000 "operator's limit on GPU 1 kept"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["records"]; assert [x["original_limit_mw"] for x in r] == [700000], r' \
  "$PFLEX_STATE_DIR/restore.json"
# After 'cap restore' the sweep runs.
"$PFLEX" cap restore >/dev/null
"$PFLEX" sweep --gpus 0,1 --caps 300 --hz 10 --duration 0.2 --pause 0 --quiet --sustain 0.1 \
  --out runs.csv -- sleep 5 >/dev/null 2>&1 || true
expect_eq "$(fake_get gpu1.limit_mw)" 700000 "GPU 1 after the sweep"
[ -n "$(fake_get gpu0.set_count)" ] || fail "the sweep after cap restore did not run"
echo "sweep_recorded: ok"
