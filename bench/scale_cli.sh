#!/usr/bin/env bash
# How pflex's commands scale with the size of a runs file (bench/README.md):
# generates runs files of each size (bench/gen_runs.sh, cached in DIR), then
# times pfi --draws 0, stats, import, export, allocate --cut 30 and study on
# each (study-cuts0: the study with --cuts 0, its data, fits and curves
# without the cuts' allocations), the median of R repeats (wall and user seconds, peak resident MB), and
# prints the ratio of each size's user time to the first size's. With --base
# OTHER_PFLEX every command also runs with that program, side by side in the
# same session (a before/after comparison that the machine's load affects
# alike); a command past --timeout seconds counts as "timeout".
#
# usage: bench/scale_cli.sh [--pflex P] [--base P] [--groups 4000,40000] [--runs 1000000]
#                           [--repeats R] [--commands pfi,stats,...] [--dir DIR] [--timeout S]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pflex=$here/../build/pflex base="" groups=4000,40000 runs="" repeats=3 timeout=600
commands=pfi,stats,import,export,allocate,study dir=${TMPDIR:-/tmp}/pflex-scale
while [ $# -gt 0 ]; do
  case $1 in
  --pflex) pflex=$2 ;; --base) base=$2 ;; --groups) groups=$2 ;; --runs) runs=$2 ;;
  --repeats) repeats=$2 ;; --commands) commands=$2 ;; --dir) dir=$2 ;; --timeout) timeout=$2 ;;
  *) echo "usage: see the head of $0" >&2; exit 2 ;;
  esac
  shift 2
done
mkdir -p "$dir"
sizes=()
IFS=, read -ra gs <<< "$groups"
for g in "${gs[@]}"; do sizes+=("$g"); done
[ -n "$runs" ] && sizes+=("$(( (runs + 5) / 6 ))")
for g in "${sizes[@]}"; do
  [ -s "$dir/g$g.csv" ] || "$here/gen_runs.sh" "$pflex" "$g" "$dir/g$g.csv" --interleave
done

# run PROG CMD FILE: one timed run; prints "wall user rss_mb" or "timeout".
run() {
  local prog=$1 cmd=$2 f=$3 db=$dir/t.db args
  case $cmd in
  pfi) args=(pfi "$f" --draws 0) ;;
  stats) args=(stats "$f" --draws 0) ;;
  import) rm -f "$db"; args=(import "$f" --db "$db") ;;
  export) [ -s "$dir/$(basename "$f").db" ] || "$prog" import "$f" --db "$dir/$(basename "$f").db" >/dev/null 2>&1
          args=(export --db "$dir/$(basename "$f").db" --out "$dir/export.csv") ;;
  allocate) args=(allocate "$f" --cut 30) ;;
  study) args=(study "$f") ;;
  study-cuts0) args=(study "$f" --cuts 0) ;; # the study without its allocations: data, fits, curves
  esac
  if /usr/bin/time -f "%e %U %M" -o "$dir/time" timeout "$timeout" "$prog" "${args[@]}" \
      >/dev/null 2>"$dir/err"; then
    awk '{printf "%s %s %.0f\n", $1, $2, $3 / 1024}' "$dir/time"
  elif [ $? -eq 124 ]; then echo timeout
  else echo "error: $prog ${args[*]}: $(tail -1 "$dir/err")" >&2; echo failed; fi
}

median() { sort -n | awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : "-"}'; }

printf "%-9s %-6s %8s %10s %10s %9s %9s\n" command prog groups "wall s" "user s" "peak MB" "user/x1"
IFS=, read -ra cmds <<< "$commands"
for cmd in "${cmds[@]}"; do
  for who in new ${base:+base}; do
    prog=$pflex; [ "$who" = base ] && prog=$base
    first=""
    for g in "${sizes[@]}"; do
      w=() u=() m=() to=0
      reps=$repeats; [ "$cmd" = study ] && reps=1
      for ((r = 0; r < reps; r++)); do
        out=$(run "$prog" "$cmd" "$dir/g$g.csv")
        case $out in timeout|failed) to=1; break ;; esac
        read -r a b c <<< "$out"; w+=("$a"); u+=("$b"); m+=("$c")
      done
      if [ "$to" -eq 1 ]; then
        printf "%-9s %-6s %8s %10s\n" "$cmd" "$who" "$g" "$out"; continue
      fi
      mw=$(printf "%s\n" "${w[@]}" | median) mu=$(printf "%s\n" "${u[@]}" | median)
      mm=$(printf "%s\n" "${m[@]}" | median)
      [ -z "$first" ] && first=$mu
      printf "%-9s %-6s %8s %10s %10s %9s %9.1f\n" "$cmd" "$who" "$g" "$mw" "$mu" "$mm" \
        "$(awk -v a="$mu" -v b="$first" 'BEGIN {print (b > 0 ? a / b : 0)}')"
    done
  done
done
