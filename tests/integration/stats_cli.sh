#!/usr/bin/env bash
# Integration test of `pflex stats` on the paper's Table 6 PFI values grouped as
# Table 10 (dense 14, MoE PT 7, MoE FT 4). Each group is written as two runs
# whose Eq. 1 value is exactly the table value: uncapped 5000 W / 1000 tok/s,
# capped 800 tok/s at 5000 * (1 - 0.2 * PFI) W, so PFI = (0.2 * PFI) / 0.2.
# Expected (hand/independent script, see tests/unit/test_stats.c): medians
# 1.27 / 1.43 / 2.10, H = 12.484845 (tie-corrected), p = 0.001945, Dunn z
# dense-MoE PT -1.667735, dense-MoE FT -3.451353, MoE PT-MoE FT -1.890162,
# Holm p 0.117472 / 0.001673 / 0.117472. Uses bash, grep, awk, tr only.
set -euo pipefail
: "${PFLEX:?PFLEX must name the pflex program}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# has GREP-ARGS: grep that reads all its input. `... | grep -q` exits at the
# first match, the writer may then die of SIGPIPE, and pipefail turns a match
# into a failure (seen under load).
has() { grep "$@" > /dev/null; }
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }' ||
  fail "$4: got '$1', expected $2 +/- $3"; }
jget() { printf '%s' "$1" | tr -d ' \n' | grep -o "\"$2\":[^,}]*" | sed -n "${3:-1}p" | cut -d: -f2-; }

{
  echo "group,gpu,gpus,cap_w,power_w,tokens_per_s,arch,task"
  awk 'BEGIN {
    split("1.10 1.22 1.27 1.52 1.17 1.23 1.25 1.26 1.27 1.30 1.30 1.34 1.47 1.51", d, " ")
    split("1.24 1.35 1.36 1.43 1.45 1.52 1.57", p, " ")
    split("1.79 2.00 2.20 2.67", f, " ")
    for (i = 1; i <= 14; i++) row("dense" i, d[i], "dense", (i <= 4 ? "ft" : "pt"))
    for (i = 1; i <= 7; i++) row("moept" i, p[i], "moe", "pt")
    for (i = 1; i <= 4; i++) row("moeft" i, f[i], "moe", "ft")
  }
  function row(g, v, a, t) {
    printf "%s,H200,8,700,5000,1000,%s,%s\n", g, a, t
    printf "%s,H200,8,200,%.6f,800,%s,%s\n", g, 5000 * (1 - 0.2 * v), a, t
  }'
} > "$tmp/t6.csv"

out=$("$PFLEX" stats "$tmp/t6.csv" --draws 200)
echo "$out"
echo "$out" | has -E '^Dense \(PT \+ FT\) +14 +1\.270 +1\.301' || fail "dense row"
echo "$out" | has -E '^MoE pretraining +7 +1\.430 +1\.417' || fail "MoE PT row"
echo "$out" | has -E '^MoE fine-tuning +4 +2\.100 +2\.165' || fail "MoE FT row"
echo "$out" | has 'Kruskal-Wallis H = 12.485 (tie-corrected; 12.470 uncorrected), df = 2, p = 0.0019' ||
  fail "Kruskal-Wallis line"
echo "$out" | has -E '^dense vs moe-ft +-3\.451 +0\.0006 +0\.0017' || fail "Dunn dense vs MoE FT"

json=$("$PFLEX" stats "$tmp/t6.csv" --json --draws 0)
compact=$(printf '%s' "$json" | tr -d ' \n')
echo "$compact" | has '"groups":\[{"name":"dense","n":14,"median":1.27,' || fail "JSON dense group"
echo "$compact" | has '{"name":"moe-pt","n":7,"median":1.43,' || fail "JSON MoE PT group"
echo "$compact" | has '{"name":"moe-ft","n":4,"median":2.1,"mean":2.165}' || fail "JSON MoE FT group"
kw=$(echo "$compact" | grep -o '"kruskal":{[^}]*}')
near "$(jget "$kw" h)" 12.484845 1e-5 "H"
near "$(jget "$kw" p)" 0.001945 1e-6 "p"
[ "$(jget "$kw" df)" = 2 ] || fail "df"
dunn=$(echo "$compact" | grep -o '"dunn":\[.*\]')
echo "$dunn" | has '{"a":"dense","b":"moe-pt","z":' || fail "Dunn pair order"
near "$(jget "$dunn" z 1)" -1.667735 1e-5 "z dense-MoE PT"
near "$(jget "$dunn" z 2)" -3.451353 1e-5 "z dense-MoE FT"
near "$(jget "$dunn" z 3)" -1.890162 1e-5 "z MoE PT-MoE FT"
near "$(jget "$dunn" p_raw 2)" 0.000558 1e-6 "p_raw dense-MoE FT"
near "$(jget "$dunn" p_holm 1)" 0.117472 1e-6 "p_holm dense-MoE PT"
near "$(jget "$dunn" p_holm 2)" 0.001673 1e-6 "p_holm dense-MoE FT"
near "$(jget "$dunn" p_holm 3)" 0.117472 1e-6 "p_holm MoE PT-MoE FT"
# Each group's PFI is listed with its cluster.
echo "$compact" | has '"group":"moeft4","gpu":"H200","gpus":8,"arch":"moe","task":"ft","cluster":"moe-ft"' ||
  fail "JSON per-group PFI"
near "$(echo "$compact" | grep -o '"group":"moeft4"[^]]*' | grep -o '"pfi":[^,]*' | cut -d: -f2)" 2.67 1e-9 "moeft4 PFI"

# A group without arch: an error naming it, exit 1.
sed -e 's/^moept3,\(.*\),moe,pt$/moept3,\1,,pt/' "$tmp/t6.csv" > "$tmp/noarch.csv"
set +e; "$PFLEX" stats "$tmp/noarch.csv" > /dev/null 2> "$tmp/err"; rc=$?; set -e
cat "$tmp/err"
[ $rc -eq 1 ] || fail "missing arch: exit $rc"
grep -q "group 'moept3' has no arch" "$tmp/err" || fail "missing arch message"

# Threads: the same output whatever their number; with two groups that have
# no PFI (their capped run as fast as the uncapped one: excluded), the same
# message, naming the first of them (as one thread stops there).
for t in 2 5; do
  [ "$("$PFLEX" stats "$tmp/t6.csv" --draws 200 --threads 1 --json)" = \
    "$("$PFLEX" stats "$tmp/t6.csv" --draws 200 --threads $t --json)" ] || fail "threads $t: output differs"
done
sed -e 's/^\(dense7,H200,8,200,[^,]*\),800,/\1,1000,/' -e 's/^\(moept2,H200,8,200,[^,]*\),800,/\1,1000,/' \
  "$tmp/t6.csv" > "$tmp/nopfi.csv"
for t in 1 4; do
  set +e; "$PFLEX" stats "$tmp/nopfi.csv" --draws 50 --threads $t > "$tmp/out$t" 2> "$tmp/err$t"; rc=$?; set -e
  [ $rc -eq 1 ] || fail "no PFI, $t threads: exit $rc"
done
grep -q "group 'dense7' has no PFI" "$tmp/err1" || fail "no PFI: message $(cat "$tmp/err1")"
cmp -s "$tmp/err1" "$tmp/err4" || fail "no PFI: 1 and 4 threads say $(cat "$tmp/err1") / $(cat "$tmp/err4")"

# Usage errors exit 2; help lists every option.
set +e; "$PFLEX" stats "$tmp/t6.csv" --definition nope > /dev/null 2>&1; rc=$?; set -e
[ $rc -eq 2 ] || fail "bad definition: exit $rc"
help=$("$PFLEX" help stats)
for o in --grid --definition --draws --seed --power-cv --tput-cv --exclude --noise-k --unit --tput-column --json --threads; do
  echo "$help" | has -- "$o" || fail "help lacks $o"
done
echo "stats_cli: ok"
