#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/fuzz_*.c) with clang in
# build-fuzz and runs each one for a bounded time, FUZZ_JOBS at a time.
# Exits non-zero when any harness finds a crash, leak, timeout or broken
# property, printing the path of the input that did it (kept under
# build-fuzz/artifacts/NAME/) and the end of the harness's log.
#
#   scripts/fuzz.sh [NAME...]     NAME: runs_csv, or fuzz_runs_csv; default all
#   scripts/fuzz.sh --build-only  builds the harnesses and runs none
#   FUZZ_SECONDS  seconds per harness (default 15)
#   FUZZ_JOBS     harnesses run at once (default: the number of CPUs)
#   FUZZ_RSS_MB   memory limit per harness (default 1536)
#   FUZZ_SEED     libFuzzer's seed (default 1, so that CI's short run explores
#                 the same way each time; 0 asks libFuzzer for a random one,
#                 for longer hunts)
#
# The inputs libFuzzer finds are kept in build-fuzz/corpus/NAME/ (the seeds in
# tests/fuzz/corpus/NAME/ are only read), so a second run starts from them.
# Reproduce a crash: build-fuzz/fuzz/fuzz_NAME CRASH_FILE
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-15}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
rss_mb=${FUZZ_RSS_MB:-1536}
seed=${FUZZ_SEED:-1}
build=build-fuzz

# libFuzzer's runtime is libclang-rt-dev, only a Recommends of clang.
if ! command -v clang >/dev/null 2>&1 || ! dpkg-query -W -f='${Status}' libclang-rt-dev 2>/dev/null |
    grep -q "install ok installed"; then
  echo "fuzz: installing clang and its runtimes" >&2
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends clang libclang-rt-dev
fi

echo "== fuzz: build ($build, clang, libFuzzer + ASan + UBSan)"
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DPFLEX_FUZZ=ON -DPFLEX_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz -j"$jobs"
[ "${1:-}" != --build-only ] || exit 0

names=()
if [ $# -gt 0 ]; then
  for n in "$@"; do names+=("${n#fuzz_}"); done
else
  for src in tests/fuzz/fuzz_*.c; do n=$(basename "$src" .c); names+=("${n#fuzz_}"); done
fi

# Runs one harness; its log goes to $build/logs/NAME.log, exit status is the fuzzer's.
run_one() {
  local name=$1 exe="$build/fuzz/fuzz_$1" src="tests/fuzz/fuzz_$1.c"
  local corpus="$build/corpus/$name" seeds="tests/fuzz/corpus/$name" art="$build/artifacts/$name/"
  [ -x "$exe" ] || { echo "fuzz: no harness $exe" >"$build/logs/$name.log"; return 2; }
  mkdir -p "$corpus" "$art"
  local args=(-max_total_time="$seconds" -rss_limit_mb="$rss_mb" -timeout=10 -print_final_stats=1
              -seed="$seed" -artifact_prefix="$art")
  [ -f "tests/fuzz/$name.dict" ] && args+=(-dict="tests/fuzz/$name.dict")
  # Options a harness asks for: comment lines "fuzz-args: ..." in its source.
  local extra
  extra=$(sed -n 's/.*fuzz-args:[[:space:]]*\(.*[^[:space:]]\)[[:space:]]*\*\/.*/\1/p' "$src" | tr '\n' ' ')
  # shellcheck disable=SC2206
  args+=($extra)
  local dirs=("$corpus")
  [ -d "$seeds" ] && dirs+=("$seeds")
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$exe" "${args[@]}" "${dirs[@]}" >"$build/logs/$name.log" 2>&1
}

mkdir -p "$build/logs"
echo "== fuzz: ${#names[@]} harnesses, ${seconds}s each, $jobs at a time"
pids=() running=()
fails=0
report() { # name status
  local name=$1 rc=$2 log="$build/logs/$1.log"
  local execs speed
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  if [ "$rc" -eq 0 ]; then
    echo "fuzz: $name ok (${execs:-?} runs, ${speed:-?}/s, corpus $(ls "$build/corpus/$name" | wc -l))"
  else
    fails=$((fails + 1))
    echo "fuzz: $name FAILED (exit $rc)"
    grep -E 'Test unit written to|^SUMMARY|ERROR:' "$log" | head -5 || true
    echo "---- last lines of $log"
    tail -40 "$log"
    echo "----"
  fi
}
i=0
while [ $i -lt ${#names[@]} ] || [ ${#pids[@]} -gt 0 ]; do
  while [ $i -lt ${#names[@]} ] && [ ${#pids[@]} -lt "$jobs" ]; do
    run_one "${names[$i]}" & pids+=($!) running+=("${names[$i]}")
    i=$((i + 1))
  done
  # Wait for the oldest harness (all run about equally long).
  rc=0
  wait "${pids[0]}" || rc=$?
  report "${running[0]}" "$rc"
  pids=("${pids[@]:1}") running=("${running[@]:1}")
done
if [ "$fails" -ne 0 ]; then
  echo "fuzz: $fails of ${#names[@]} harnesses failed; reproduce with $build/fuzz/fuzz_NAME FILE"
  exit 1
fi
echo "fuzz: all ${#names[@]} harnesses clean"
