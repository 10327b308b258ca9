#!/usr/bin/env bash
# The allocator and the study, old build against new, side by side in one
# run (alternating, so both see the same machine load): the default study
# (`pflex study`, user CPU seconds, REPEATS pairs, medians and their ratio),
# then bench_alloc at each of SIZES, old then new (median ms per call), and
# per size the ratio new / old of every row both have.
#
#   git archive <old-commit> | tar -x -C /tmp/old && cmake -S /tmp/old -B /tmp/old/build \
#     && cmake --build /tmp/old/build --target pflex-cli bench_alloc
#   bench/old_vs_new.sh /tmp/old/build build 3 1000,10000,100000,1000000
set -euo pipefail
old=${1:?usage: old_vs_new.sh OLD_BUILD NEW_BUILD [REPEATS] [SIZES]}
new=${2:?usage: old_vs_new.sh OLD_BUILD NEW_BUILD [REPEATS] [SIZES]}
reps=${3:-3}
sizes=${4:-1000,10000,100000,1000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$reps"); do
  for which in old new; do
    dir=$old
    [ "$which" = new ] && dir=$new
    /usr/bin/time -f "%U" -o "$tmp/t" "$dir/pflex" study >/dev/null 2>&1
    cat "$tmp/t" >>"$tmp/study_$which"
  done
done
mo=$(median <"$tmp/study_old")
mn=$(median <"$tmp/study_new")
echo "pflex study (default run), user s: old $(paste -sd' ' "$tmp/study_old") new $(paste -sd' ' "$tmp/study_new")"
echo "medians: old $mo s, new $mn s, new / old = $(awk -v a="$mn" -v b="$mo" 'BEGIN {printf "%.3f", a / b}')"

# bench_alloc one size at a time, old then new, so that both see the same load.
table() { awk '/^time \(ms\):/ {on = 1; next} /^per job/ {on = 0} on && NF > 1 && $1 != "strategy" {print $1, $2}' "$1"; }
for n in ${sizes//,/ }; do
  for which in old new; do
    dir=$old
    [ "$which" = new ] && dir=$new
    "$dir/bench/bench_alloc" --sizes "$n" --repeats "$reps" >"$tmp/alloc_${which}_$n" || true
    echo "--- bench_alloc $n jobs, $which ($dir), load $(cut -d' ' -f1 /proc/loadavg)"
    cat "$tmp/alloc_${which}_$n"
  done
  table "$tmp/alloc_old_$n" | sort >"$tmp/t_old_$n"
  table "$tmp/alloc_new_$n" | sort >"$tmp/t_new_$n"
done
echo "--- median ms per call at each size: old, new, new / old"
for n in ${sizes//,/ }; do
  echo "$n jobs:"
  join -a 2 "$tmp/t_old_$n" "$tmp/t_new_$n" | awk '{
    if (NF == 3) printf "  %-12s %12.3f %12.3f %8.3f\n", $1, $2, $3, $3 / $2
    else printf "  %-12s %12s %12.3f %8s\n", $1, "-", $2, "-" }'
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
