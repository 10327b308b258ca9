#!/usr/bin/env bash
# Installs what is missing, builds pflex with warnings as errors, and runs every
# test: the whole CTest suite, then all of it again under ASan+UBSan (the
# integration tests run the sanitized pflex program) and the unit tests under
# valgrind. Exits non-zero on the first failure. Used by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

bash scripts/install-deps.sh

echo "== build (warnings are errors)"
cmake -S . -B build -DPFLEX_WERROR=ON >/dev/null
cmake --build build -j"$jobs"

echo "== tests"
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== all tests under AddressSanitizer + UndefinedBehaviorSanitizer"
# -O1: the sanitizers' usual level (full checks, readable stacks), about twice
# as fast as -O0 on the long integration tests.
cmake -S . -B build-asan -DPFLEX_SANITIZE=ON -DPFLEX_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g -UNDEBUG" >/dev/null
cmake --build build-asan -j"$jobs"
# readme_commands is left out here: it checks the README's command lines
# (the normal stage runs it), and each command it runs is run under the
# sanitizers by that command's own tests; sanitized, it alone took 8 minutes.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -E '^integration\.readme_commands$'

echo "== unit tests under valgrind"
fails=0
for t in build/tests/test_*; do
  [ -x "$t" ] || continue
  if ! valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
        "$t" >/dev/null 2>build/valgrind-$(basename "$t").log; then
    echo "valgrind: $(basename "$t") FAILED"; tail -30 build/valgrind-$(basename "$t").log; fails=$((fails + 1))
  else
    echo "valgrind: $(basename "$t") clean"
  fi
done
[ "$fails" -eq 0 ] || { echo "$fails test executables failed under valgrind"; exit 1; }

echo "== fuzz harnesses (libFuzzer, FUZZ_SECONDS each, default 15)"
bash scripts/fuzz.sh
echo "all checks passed"
