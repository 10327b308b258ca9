#!/usr/bin/env bash
# Store schema 2 (packed extras) against an older pflex: for each runs file,
# REPEATS alternating OLD/NEW pairs of `import` into a fresh store of its own
# and `export` of that store to CSV; prints per command the median wall and
# user+sys seconds, the store's size, and whether OLD's and NEW's exports are
# the same bytes (cmp). Then NEW's migration of OLD's store (the first write,
# here an import of a one-run file, converts run_extras).
#
#   bench/store_v2.sh OLD_PFLEX NEW_PFLEX [REPEATS] FILE.csv...
#   bench/store_v2.sh /work/base-build/pflex build/pflex 2 /tmp/g4k.csv /tmp/g40k.csv
set -euo pipefail
old=${1:?usage: store_v2.sh OLD_PFLEX NEW_PFLEX [REPEATS] FILE.csv...}
new=${2:?usage: store_v2.sh OLD_PFLEX NEW_PFLEX [REPEATS] FILE.csv...}
reps=${3:-2}
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# timed WHO WHAT CMD...: runs CMD, appends "wall user+sys" to $tmp/WHO.WHAT.
timed() {
  local who=$1 what=$2
  shift 2
  /usr/bin/time -f "%e %U %S" -o "$tmp/t" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  awk '{printf "%s %.2f\n", $1, $2 + $3}' "$tmp/t" >>"$tmp/$who.$what"
}
col() { cut -d' ' -f"$1" "$2" | median; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-12s %-7s %-4s %8s %12s %10s\n" file command prog "wall s" "user+sys s" "store MB"
for f in "$@"; do
  name=$(basename "$f" .csv)
  rm -f "$tmp"/old.* "$tmp"/new.*
  for i in $(seq "$reps"); do
    for who in old new; do
      prog=$old
      [ "$who" = new ] && prog=$new
      rm -f "$tmp/$who.db"
      timed "$who" import "$prog" import "$f" --db "$tmp/$who.db"
      timed "$who" export "$prog" export --db "$tmp/$who.db" --out "$tmp/$who.csv"
    done
  done
  for what in import export; do
    for who in old new; do
      printf "%-12s %-7s %-4s %8s %12s %10s\n" "$name" "$what" "$who" "$(col 1 "$tmp/$who.$what")" \
        "$(col 2 "$tmp/$who.$what")" "$(du -m --apparent-size "$tmp/$who.db" | cut -f1)"
    done
  done
  cmp -s "$tmp/old.csv" "$tmp/new.csv" && echo "$name: exports identical (cmp)" ||
    echo "$name: EXPORTS DIFFER"
  printf 'group,gpu,gpus,cap_w,power_w,tokens_per_s\nzz-migrate,H200,8,700,5000,100\n' >"$tmp/one.csv"
  timed new migrate "$new" import "$tmp/one.csv" --db "$tmp/old.db"
  "$new" export --db "$tmp/old.db" --out "$tmp/migrated.csv" 2>/dev/null
  grep -v '^zz-migrate,' "$tmp/migrated.csv" | cmp -s - "$tmp/old.csv" && same=identical || same=DIFFERENT
  echo "$name: NEW migrates OLD's store: $(cat "$tmp/new.migrate") (wall, user+sys s);" \
    "$(du -m --apparent-size "$tmp/old.db" | cut -f1) MB after; export $same to OLD's"
  rm -f "$tmp/new.migrate"
done
