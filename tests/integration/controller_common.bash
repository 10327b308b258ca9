# Shared helpers of the controller_*.sh integration tests (sourced; the .bash
# suffix keeps it out of the test glob). Needs pflexd: $PFLEXD, or pflexd in
# the build directory.
set -euo pipefail

: "${PFLEX_BINARY_DIR:?}"
CTL="$PFLEX_BINARY_DIR/pflex-controller"
FAKE_LIB="${FAKE_NVML_LIB:-$PFLEX_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1}"
PFLEXD="${PFLEXD:-$PFLEX_BINARY_DIR/pflexd}"
[ -x "$CTL" ] || { echo "missing $CTL"; exit 1; }
[ -f "$FAKE_LIB" ] || { echo "missing $FAKE_LIB (build the fake-nvml target)"; exit 1; }
[ -x "$PFLEXD" ] || { echo "missing $PFLEXD (build the pflexd target)"; exit 1; }
# TIME_SCALE: the time bounds the tests assert are for an optimised build; a
# sanitized one (ASan+UBSan, several times slower, in the same run as every
# other test) gets four times as long. Safety properties (overshoot, limits
# left wrong) are asserted the same in both.
TIME_SCALE=1
if grep -qs '^PFLEX_SANITIZE:BOOL=ON' "$PFLEX_BINARY_DIR/CMakeCache.txt"; then
  TIME_SCALE=4
  echo "note: sanitized build: time bounds x$TIME_SCALE"
fi

T=$(mktemp -d)
PIDS=()
[ -z "${KEEP_T:-}" ] || echo "workdir: $T"
# Every process a test starts is killed on the way out, whatever happens.
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${KEEP_T:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# free_port: a loopback TCP port nothing listens on.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# agent_state FILE N: a fake NVML state of N GPUs drawing 600 W, limits 200-700 W.
agent_state() {
  local f=$1 n=$2 i
  : > "$f"
  for ((i = 0; i < n; i++)); do
    printf 'gpu%d.name=NVIDIA H200\ngpu%d.uuid=GPU-ctl-%s-%d\ngpu%d.pci=00000000:1%d:00.0\n' \
      "$i" "$i" "$(basename "$f")" "$i" "$i" "$i" >> "$f"
    printf 'gpu%d.power_mw=600000\ngpu%d.energy_mj=0\ngpu%d.limit_mw=700000\ngpu%d.default_mw=700000\ngpu%d.min_mw=200000\ngpu%d.max_mw=700000\n' \
      "$i" "$i" "$i" "$i" "$i" "$i" >> "$f"
  done
}

# wait_until SECONDS CMD...: polls CMD every 0.1 s, fails after SECONDS.
wait_until() {
  local limit=$1 i
  shift
  for ((i = 0; i < limit * 10; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  return 1
}
