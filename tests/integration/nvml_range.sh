# Limits outside a GPU's range: refused by default (nothing changes), or
# clamped with --clamp, saying which and why.
source "$(dirname "$0")/nvml_common.bash"
fake_state 2
fake_set gpu1.min_mw 250000   # GPU 1 has a narrower range: 250-700 W

set +e
msg=$("$PFLEX" cap set --gpus 0,1 --watts 220 2>&1); rc=$?
set -e
echo "$msg"
expect_eq "$rc" 1 "exit status of a refused request"
echo "$msg" | grep >/dev/null "GPU 1: 220.0 W is outside its settable range 250.0-700.0 W; refused" || fail "refusal message"
# GPU 0 could take 220 W, but a refused request changes nothing anywhere.
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 after refusal"
expect_eq "$(fake_get gpu1.limit_mw)" 700000 "GPU 1 after refusal"
[ -z "$(fake_get gpu0.set_count)" ] || fail "a set call happened"

out=$("$PFLEX" cap set --gpus 0,1 --watts 220 --clamp)
echo "$out"
echo "$out" | grep >/dev/null "GPU 1: 220.0 W is below the settable range 250.0-700.0 W: clamped to 250.0 W" || fail "clamp message"
expect_eq "$(fake_get gpu0.limit_mw)" 220000 "GPU 0 inside its range"
expect_eq "$(fake_get gpu1.limit_mw)" 250000 "GPU 1 clamped to its minimum"

out=$("$PFLEX" cap set --gpus 0 --watts 900 --clamp)
echo "$out" | grep >/dev/null "above the settable range 200.0-700.0 W: clamped to 700.0 W" || fail "clamp above"
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 clamped to its maximum"

set +e
"$PFLEX" cap set --gpus 0 --watts abc 2>/dev/null; rc=$?
set -e
expect_eq "$rc" 2 "bad --watts is a usage error"
set +e
"$PFLEX" cap set --gpus 5 --watts 300 2>/dev/null; rc=$?
set -e
expect_eq "$rc" 1 "unknown GPU index"

# Usage errors come before the backend is opened (no driver needed to hear them).
set +e
msg=$(PFLEX_NVML_LIB=/nonexistent "$PFLEX" cap set --gpus 0 2>&1); rc=$?
set -e
expect_eq "$rc" 2 "cap set without --watts"
echo "$msg" | grep >/dev/null -- "give --watts W or --from FILE" || fail "missing --watts not said"
set +e
"$PFLEX" cap get --backend nosuch >/dev/null 2>&1; rc=$?
set -e
expect_eq "$rc" 2 "unknown backend"
echo "nvml_range: ok"
