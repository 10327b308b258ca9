#!/usr/bin/env bash
# Usage errors in one wording and one exit status across the commands that
# read their options from a table (src/cli/options.c): "error: ..." then
# "try 'pflex help CMD'", exit 2; numbers are decimal only; help names every
# option the command accepts.
set -uo pipefail
: "${PFLEX:?PFLEX must name the pflex program}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# usage_error HELP-CMD WANT-MESSAGE ARGS...: pflex ARGS exits 2 and prints exactly
# "error: WANT-MESSAGE" and the pointer to help on stderr, nothing on stdout.
usage_error() {
  local cmd=$1 want=$2
  shift 2
  "$PFLEX" "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  [ "$rc" -eq 2 ] || fail "pflex $*: exit $rc, expected 2 ($(cat "$tmp/err"))"
  printf 'error: %s\ntry '"'"'pflex help %s'"'"'\n' "$want" "$cmd" > "$tmp/want"
  cmp -s "$tmp/want" "$tmp/err" || fail "pflex $*: stderr '$(cat "$tmp/err")', expected '$(cat "$tmp/want")'"
  [ ! -s "$tmp/out" ] || fail "pflex $*: printed on stdout"
}

touch "$tmp/runs.csv"
for cmd in pfi stats fit ablation allocate aggregate import; do
  usage_error "$cmd" "unknown option '--foo'" "$cmd" "$tmp/runs.csv" --foo
done
usage_error predict "unknown option '--foo'" predict --model m.json "$tmp/runs.csv" --foo
usage_error export "unknown option '--foo'" export --foo
for sub in reference check population plot; do
  usage_error twin "unknown option '--foo'" twin "$sub" --foo
done

# Values: decimal only, the range said, the allowed names listed.
usage_error allocate "--cut: '0x1e' is not a number from 0 to 100" allocate "$tmp/runs.csv" --cut 0x1e
usage_error allocate "--cut: 'inf' is not a number from 0 to 100" allocate "$tmp/runs.csv" --cut inf
usage_error allocate "--cut and --target-w exclude each other" allocate "$tmp/runs.csv" --cut 5 --target-w 100
usage_error allocate "give one of --cut and --target-w" allocate "$tmp/runs.csv"
usage_error allocate "--strategy: 'best' is not one of equal, moe-ft, dram, pfi, optimal, oracle" \
  allocate "$tmp/runs.csv" --cut 5 --strategy best
usage_error allocate "--knots: '1' is not a whole number from 2 to 100000" allocate "$tmp/runs.csv" --cut 5 --knots 1
usage_error pfi "--draws: '-1' is not a whole number from 0 to 10000000" pfi "$tmp/runs.csv" --draws -1
usage_error pfi "--unit: 'bytes' is not one of tokens, samples, steps, step-time" pfi "$tmp/runs.csv" --unit bytes
usage_error pfi "--grid: '0,500' is not a list of caps in W (e.g. 200,500,600,700)" pfi "$tmp/runs.csv" --grid 0,500
usage_error pfi "--json and --csv exclude each other" pfi "$tmp/runs.csv" --json --csv
usage_error pfi "missing RUNS.csv" pfi
usage_error pfi "unexpected argument 'b.csv' (expected one RUNS.csv)" pfi a.csv b.csv
usage_error pfi "--draws needs a value (N)" pfi "$tmp/runs.csv" --draws
usage_error pfi "--json takes no value" pfi "$tmp/runs.csv" --json=1
usage_error fit "--model: 'lasso' is not one of ols, ridge, prior" fit "$tmp/runs.csv" --model lasso
usage_error fit "--lambda is for --model ridge" fit "$tmp/runs.csv" --lambda 1
usage_error predict "--model FILE is required" predict "$tmp/runs.csv"
usage_error aggregate "--append needs --out" aggregate "$tmp/runs.csv" --append
usage_error aggregate "--top: '0' is not a number in (0, 1]" aggregate "$tmp/runs.csv" --top 0
usage_error import "--replace and --append exclude each other" import "$tmp/runs.csv" --replace --append
usage_error export "--format: 'xml' is not one of csv, json" export --format xml
usage_error export "--json, --csv and --format name different formats" export --json --format csv
usage_error twin "--jobs N is required" twin population
usage_error twin "--jobs: '0' is not a whole number from 1 to 100000" twin population --jobs 0
usage_error twin "--out: '$tmp/f.jpg' is not a figure file (.svg, .png or .pdf)" twin plot --out "$tmp/f.jpg"
usage_error twin "unknown subcommand 'bogus' (reference, check, population, plot)" twin bogus

# Help lists every option of the table, for every converted command.
declare -A opts=(
  [pfi]="--grid --definition --exclude --noise-k --noise --power-cv --tput-cv --draws --seed --set --unit --tput-column --json --csv"
  [stats]="--grid --definition --draws --set --unit --json"
  [fit]="--features --model --lambda --set --loco --grid --definition --unit --out --json"
  [ablation]="--set --loco --grid --definition --paper --json --csv"
  [predict]="--model --set --prior-fallback --unit --json --csv"
  [allocate]="--cut --target-w --strategy --objective --knots --unit --json --csv"
  [aggregate]="--group --gpu-type --cap --tput --unit --tput-column --fb-threshold-gib --util-threshold --sustain-s --top --align-s --out --append --csv --json"
  [import]="--db --replace --append --unit --tput-column --format --json"
  [export]="--db --group --format --json --csv --out --list"
  [twin]="--out --seed --quiet --json --strict --csv --jobs --title"
)
for cmd in "${!opts[@]}"; do
  "$PFLEX" help "$cmd" > "$tmp/help" || fail "pflex help $cmd failed"
  head -1 "$tmp/help" | grep -q "^usage: pflex $cmd" || fail "help $cmd: no usage line"
  for o in ${opts[$cmd]}; do
    grep -q -- "$o\b" "$tmp/help" || fail "help $cmd lacks $o"
  done
  awk 'length > 80 { exit 1 }' "$tmp/help" || fail "help $cmd has a line over 80 columns"
  "$PFLEX" "$cmd" --help | cmp -s - "$tmp/help" || fail "pflex $cmd --help differs from pflex help $cmd"
done
echo "usage_errors: ok"
