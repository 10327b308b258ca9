#!/usr/bin/env bash
# Runs the unit test executables (build/tests/test_*) under valgrind's
# memcheck, VALGRIND_JOBS at a time (default: the number of CPUs), the
# longest first by CTest's last times in build/ (the normal stage of
# scripts/test.sh writes them), so that the longest one (test_gpu, about 2 of
# the 5 minutes in one) does not start last. Exits non-zero when any of them
# reports an error or a definite or indirect leak, printing the end of its
# log (build/valgrind-NAME.log). The tests that start threads also run
# under helgrind, which reports memory shared without a lock (log:
# build/helgrind-NAME.log).
#
#   scripts/valgrind.sh [-x NAME]... [NAME...]   NAME: test_gpu; default all;
#                                                -x NAME leaves NAME out
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
jobs=${VALGRIND_JOBS:-$(nproc 2>/dev/null || echo 2)}
cost="$build/Testing/Temporary/CTestCostData.txt"

except=() names=()
while [ $# -gt 0 ]; do
  case $1 in
    -x) except+=("$2"); shift 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
if [ ${#names[@]} -eq 0 ]; then
  for t in "$build"/tests/test_*; do [ -f "$t" ] && [ -x "$t" ] && names+=("$(basename "$t")"); done
fi

# The names to run, one a line, the longest (by CTest's last time) first.
order() {
  local n c
  for n in "${names[@]}"; do
    [[ " ${except[*]} " == *" $n "* ]] && continue
    c=$(awk -v t="unit.$n" '$1 == t { print $3 }' "$cost" 2>/dev/null || true)
    echo "${c:-0} $n"
  done | sort -k1,1gr | cut -d' ' -f2
}

# The unit tests that start threads, and what helgrind skips of them (it
# runs about 30 times slower than the test alone).
threaded=" test_study_threads "
helgrind_args() { [ "$1" = test_study_threads ] && echo "--skip test_reference_same_bits"; }
export threaded
export -f helgrind_args

# Runs one executable; prints one line; exit 0 when clean.
run_one() {
  local n=$1 log="build/valgrind-$1.log"
  rm -f "build/helgrind-$n.log"
  if ! valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
      "build/tests/$n" > /dev/null 2> "$log"; then
    echo "valgrind: $n FAILED (log: $log)"
    return 1
  fi
  if [[ "$threaded" == *" $n "* ]]; then
    log="build/helgrind-$n.log"
    # shellcheck disable=SC2046 # the arguments split on purpose
    if ! valgrind -q --tool=helgrind --error-exitcode=99 "build/tests/$n" $(helgrind_args "$n") \
        > /dev/null 2> "$log"; then
      echo "valgrind: $n FAILED under helgrind (log: $log)"
      return 1
    fi
  fi
  echo "valgrind: $n clean"
}
export -f run_one

rc=0
# shellcheck disable=SC2016 # $1 is run_one's argument, expanded by that bash
order | xargs -r -P "$jobs" -I{} bash -c 'run_one "$1"' _ {} | tee "$build/valgrind-results.txt" || rc=$?
failed=$(sed -n 's/^valgrind: \([^ ]*\) FAILED.*/\1/p' "$build/valgrind-results.txt")
for n in $failed; do
  for log in "$build/valgrind-$n.log" "$build/helgrind-$n.log"; do
    [ -s "$log" ] || continue
    echo "---- last lines of $log"
    tail -30 "$log"
  done
done
if [ -n "$failed" ] || [ "$rc" -ne 0 ]; then
  echo "valgrind: $(echo "$failed" | wc -w) test executables failed (xargs exit $rc)"
  exit 1
fi
