#!/usr/bin/env bash
# Installs what is missing, builds pflex with warnings as errors, and runs every
# test: the whole CTest suite, then all of it again under ASan+UBSan (the
# integration tests run the sanitized pflex program) and the unit tests under
# valgrind, then the fuzz harnesses. Exits non-zero on the first failure. Used
# by .ci/run.
#
# Work that nothing times (the sanitized build, the valgrind runs, the fuzz
# harnesses' build) runs beside the test suites at the idle scheduling class
# (SCHED_IDLE): it gets only CPU time the tests leave unused, mostly while the
# simulated clusters run alone (RUN_SERIAL, about 4 minutes a suite, with a
# fraction of one core busy), and yields the CPU the moment a test wants it;
# once the suite is done it goes on at normal priority. agent_lease, which
# times an fsync path, runs only after that work is done, alone.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
lease='^integration\.agent_lease$'

# idle CMD...: CMD in the background, in its own process group, at the idle
# class (nice 19 where SCHED_IDLE is refused); sets bg.
idle() {
  if chrt --idle 0 true 2>/dev/null; then
    setsid chrt --idle 0 "$@" &
  else
    setsid nice -n 19 "$@" &
  fi
  bg=$!
}
# finish NAME LOG: back to normal priority (nothing is left to yield to, and
# other load on the machine must not starve it), waits for the background
# work, prints its log; fails with it.
finish() {
  local rc=0 p
  for p in $(pgrep -g "$bg" 2>/dev/null || true); do
    chrt --other -p 0 "$p" 2>/dev/null || renice -n 0 -p "$p" >/dev/null 2>&1 || true
  done
  wait "$bg" || rc=$?
  bg=
  cat "$2"
  [ "$rc" -eq 0 ] || { echo "$1 failed (exit $rc)"; exit 1; }
}
bg=
trap '[ -z "$bg" ] || kill -- -"$bg" 2>/dev/null || true' EXIT

bash scripts/install-deps.sh

echo "== build (warnings are errors)"
cmake -S . -B build -DPFLEX_WERROR=ON >/dev/null
cmake --build build -j"$jobs"

echo "== tests (the sanitized tree builds alongside, at idle priority)"
# -O1: the sanitizers' usual level (full checks, readable stacks), about twice
# as fast as -O0 on the long integration tests.
idle bash -c 'cmake -S . -B build-asan -DPFLEX_SANITIZE=ON -DPFLEX_WERROR=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g -UNDEBUG" >/dev/null &&
  cmake --build build-asan -j'"$jobs" > build/asan-build.log 2>&1
ctest --test-dir build --output-on-failure -j"$jobs" -E "$lease"
echo "== build under AddressSanitizer + UndefinedBehaviorSanitizer (its log)"
finish "the sanitized build" build/asan-build.log
ctest --test-dir build --output-on-failure -R "$lease"

echo "== all tests under AddressSanitizer + UndefinedBehaviorSanitizer (alongside, at idle priority: the unit tests under valgrind, then the fuzz harnesses' build)"
# test_controller_slurm times a kill (under 3 s): it runs under valgrind
# afterwards, not waiting for idle CPU.
timed=test_controller_slurm
# shellcheck disable=SC2016 # "$1" is expanded by the inner bash
idle bash -c 'bash scripts/valgrind.sh -x "$1" && bash scripts/fuzz.sh --build-only' _ "$timed" \
  > build/valgrind-stage.log 2>&1
# readme_commands is left out here: it checks the README's command lines
# (the normal stage runs it), and each command it runs is run under the
# sanitizers by that command's own tests; sanitized, it alone took 8 minutes.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan --output-on-failure -j"$jobs" -E "^integration\.readme_commands\$|$lease"
echo "== unit tests under valgrind, and the fuzz harnesses' build (their log)"
finish "valgrind or the fuzz build" build/valgrind-stage.log
bash scripts/valgrind.sh "$timed"
ctest --test-dir build-asan --output-on-failure -R "$lease"
unset ASAN_OPTIONS UBSAN_OPTIONS

echo "== fuzz harnesses (libFuzzer, FUZZ_SECONDS each, default 15)"
bash scripts/fuzz.sh
echo "all checks passed"
