# Shared helpers of the nvml_*.sh and sweep_*.sh integration tests (sourced;
# the .bash suffix keeps it out of the test glob).
# Sets up a temporary directory with a fake NVML state of N GPUs and points
# pflex at the fake libnvidia-ml.so.1.
set -euo pipefail

: "${PFLEX:?PFLEX must name the pflex program}"
: "${PFLEX_BINARY_DIR:?}"
FAKE_LIB="$PFLEX_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1"
[ -f "$FAKE_LIB" ] || { echo "missing $FAKE_LIB (build the fake-nvml target)"; exit 1; }

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export PFLEX_NVML_LIB="$FAKE_LIB"
export FAKE_NVML_STATE="$T/fake.state"
export PFLEX_STATE_DIR="$T/state"
export PFLEX_GPU_BACKEND=nvml

# shellcheck source=../fake-nvml/state.bash
source "$(dirname "${BASH_SOURCE[0]}")/../fake-nvml/state.bash"
# fake_state N: N H200-like GPUs at their default 700 W limit, range 200-700 W.
fake_state() { fake_nvml_write_state "$FAKE_NVML_STATE" "$1"; }

# fake_get KEY: the value of KEY in the fake's state (last one wins, as in the fake).
fake_get() { grep "^$1=" "$FAKE_NVML_STATE" | tail -n1 | cut -d= -f2-; }
fake_set() { echo "$1=$2" >> "$FAKE_NVML_STATE"; }

fail() { echo "FAIL: $*" >&2; exit 1; }
expect_eq() { [ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"; }
