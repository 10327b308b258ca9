#!/usr/bin/env bash
# pflex against a straightforward NumPy implementation of the study
# protocol's allocation core, side by side in one invocation (bench/README.md):
# bench_protocol (C, the library's allocator) and bench/study_numpy.py on the
# same runs file and protocol, each timed after loading, then the ratio.
# Each runs R times in turn (C, NumPy, C, NumPy, ...), so that the machine's
# load hits both alike; the medians are compared.
# Prerequisite: Debian's python3-numpy (installed here when missing, as root).
#
# usage: bench/compare_numpy.sh [RUNS.csv] [--workloads W] [--repeats R]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
runs=$here/../data/reference/runs.csv workloads=500 repeats=3
[ $# -gt 0 ] && [ "${1#--}" = "$1" ] && { runs=$1; shift; }
while [ $# -gt 0 ]; do
  case $1 in
  --workloads) workloads=$2 ;; --repeats) repeats=$2 ;;
  *) echo "usage: $0 [RUNS.csv] [--workloads W] [--repeats R]" >&2; exit 2 ;;
  esac
  shift 2
done
bin=$here/../build/bench/bench_protocol
[ -x "$bin" ] || { echo "$0: build first: cmake --build build --target bench_protocol" >&2; exit 1; }
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  echo "installing python3-numpy (Debian) for the comparison" >&2
  apt-get install -y -q python3-numpy >/dev/null
fi
c=() py=()
for ((r = 0; r < repeats; r++)); do
  out=$("$bin" "$runs" --workloads "$workloads")
  c+=("$(awk '/^seconds/ {print $2}' <<< "$out")")
  [ "$r" -eq 0 ] && grep -v '^seconds' <<< "$out"
  out=$(/usr/bin/python3 "$here/study_numpy.py" "$runs" --workloads "$workloads")
  py+=("$(awk '/^seconds/ {print $2}' <<< "$out")")
  [ "$r" -eq 0 ] && grep -v '^seconds' <<< "$out"
done
median() { printf "%s\n" "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
mc=$(median "${c[@]}") mp=$(median "${py[@]}")
echo "medians of $repeats: pflex $mc s, numpy $mp s; numpy / pflex = $(awk -v a="$mp" -v b="$mc" 'BEGIN {printf "%.1f", a / b}')"
