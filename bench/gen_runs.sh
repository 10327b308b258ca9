#!/usr/bin/env bash
# Writes a large, realistic runs CSV for the scaling benchmarks (bench/README.md):
# GROUPS sweep groups of 6 runs each, simulated by pflex's twin (pflex twin
# population: H100/H200 jobs of Acme GPU counts, 6-cap sweeps, DCGM telemetry;
# simulated, not measured). The twin draws at most 100,000 groups per call, so
# bigger files are made of chunks with their own seeds, their group names
# prefixed "cN/" to keep them apart. With --interleave the runs are shuffled
# (seeded), as in an archive where sweeps ran side by side; by default each
# group's runs are contiguous, as the twin writes them.
#
# usage: bench/gen_runs.sh PFLEX GROUPS OUT.csv [--interleave] [--seed S]
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 PFLEX GROUPS OUT.csv [--interleave] [--seed S]" >&2; exit 2; }
pflex=$1 groups=$2 out=$3
shift 3
interleave=0 seed=1
while [ $# -gt 0 ]; do
  case $1 in
  --interleave) interleave=1 ;;
  --seed) seed=$2; shift ;;
  *) echo "$0: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[[ $groups =~ ^[1-9][0-9]*$ ]] || { echo "$0: GROUPS must be a positive integer" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chunk=100000 left=$groups n=0
while [ "$left" -gt 0 ]; do
  k=$((left < chunk ? left : chunk))
  "$pflex" twin population --jobs "$k" --seed $((seed + n)) --out "$tmp/c$n.csv" >/dev/null
  left=$((left - k))
  n=$((n + 1))
done
{
  head -n 1 "$tmp/c0.csv"
  for ((i = 0; i < n; i++)); do
    if [ "$n" -eq 1 ]; then
      tail -n +2 "$tmp/c$i.csv"
    else # group names from the twin hold no comma or quote: the first field is the name
      tail -n +2 "$tmp/c$i.csv" | sed "s#^#c$i/#"
    fi
  done
} > "$tmp/all.csv"
if [ "$interleave" -eq 1 ]; then
  { head -n 1 "$tmp/all.csv"
    tail -n +2 "$tmp/all.csv" | shuf --random-source=<(yes "$seed"); } > "$out"
else
  mv "$tmp/all.csv" "$out"
fi
echo "$out: $groups groups, $(($(wc -l < "$out") - 1)) runs (simulated by pflex twin population)" >&2
