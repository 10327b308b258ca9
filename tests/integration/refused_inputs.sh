#!/usr/bin/env bash
# Issue 14's inputs that must be refused (or handled one documented way), one
# row each: the input, the command, the exit status and the message, which
# names the file and the line, column or field at fault. Inputs that are
# accepted are checked for what a later command would choke on.
source "$(dirname "$0")/cli_common.bash"

# row RC WANT ARGS...: pflex ARGS exits RC and its stderr holds WANT (a fixed
# string; empty: anything). Leaves stdout in out, stderr in err.
row() {
  local want_rc=$1 want=$2
  shift 2
  "$PFLEX" "$@" > out 2> err
  local rc=$?
  [ "$rc" -eq "$want_rc" ] || fail "pflex $*: exit $rc, expected $want_rc ($(cat err))"
  [ -z "$want" ] || grep -qF -- "$want" err || fail "pflex $*: stderr lacks '$want': $(cat err)"
}
# out_has TEXT / out_lacks TEXT: about the stdout of the last row.
out_has() { grep -qF -- "$1" out || fail "stdout lacks '$1': $(head -3 out)"; }
out_lacks() { ! grep -qF -- "$1" out || fail "stdout has '$1': $(head -3 out)"; }
# json_ok EXPR WHY: the Python expression EXPR holds of the JSON stdout d.
json_ok() { python3 -c "import json; d = json.load(open('out')); assert $1, d" > /dev/null || fail "$2"; }
# usage ARGS...: the parser's usage error (exit 2, "error: ...", the pointer to help).
usage() {
  local cmd=$1 want=$2
  shift 2
  row 2 "error: $want" "$@"
  [ "$(tail -1 err)" = "try 'pflex help $cmd'" ] || fail "pflex $*: no pointer to help: $(cat err)"
  [ ! -s out ] || fail "pflex $*: printed on stdout"
}

# ---- allocate: targets at, above and just under the total; the deepest cut ----
# The reference set's uncapped total is 283981.7 W.
row 0 "" allocate "$ref" --target-w 1e12
out_has "no cut is needed"
out_lacks "% cut"
row 0 "" allocate "$ref" --target-w 283981.9
out_has "no cut is needed"
out_lacks "-0.0%"
row 0 "" allocate "$ref" --target-w 283981.6 --json
json_ok '0 <= d["cut"] < 1e-5' "a target just under the total: cut not a tiny non-negative fraction"
row 0 "" allocate "$ref" --target-w 283981.6
out_has "<0.1% cut"
out_lacks "-0.0%"
row 0 "" allocate "$ref" --target-w 1e12 --json
json_ok 'd["cut"] == 0' "a target above the total: JSON cut is not 0"
# 1 - 83506.5 / 283981.7 = 70.594%: said as 70.59% (feasible), never 70.6% (not).
row 1 "the deepest feasible cut is 70.59%" allocate "$ref" --cut 90
row 0 "" allocate "$ref" --cut 70.59
row 1 "is infeasible" allocate "$ref" --cut 70.6

# ---- a capped run faster than the uncapped one ----
cat > fast.csv << 'EOF'
group,gpu,gpus,cap_w,power_w,tokens_per_s
a,H200,8,700,5000,1000
a,H200,8,500,3800,1100
a,H200,8,300,2300,600
EOF
row 1 "cannot use 'fast.csv': line 3, group 'a': the 500 W run's throughput is 10.00% above the uncapped run's (line 2), beyond noise" \
  allocate fast.csv --cut 10
row 0 "" pfi fast.csv # pfi leaves it out, by the same rule, and says so
out_has "500 W excluded: throughput 10.00% above the uncapped run's, beyond noise (2 x 0.78%): check the uncapped run"
# Within noise (0.5% over, under 2 x 0.71%): the cap does not bind; t_max stays the measured one.
sed 's/3800,1100/3800,1005/' fast.csv > near.csv
row 0 "" allocate near.csv --cut 10 --json
json_ok 'd["jobs"][0]["t_max"] == 1000' "t_max above the measured uncapped throughput"
echo '{"jobs":[{"name":"a","gpus":8,"points":[[2000,100],[3000,90],[5000,80]]}]}' > falling.json
row 1 "cannot read 'falling.json': field 'points': job 1 ('a'): point 1 ([2000, 100]) has 25.00% more throughput than the point at the highest power" \
  allocate falling.json --cut 10
echo '{"jobs":[{"name":"a","gpus":8,"points":[[2000,70],[3000,80.5],[5000,80]]}]}' > flat.json
row 0 "" allocate flat.json --cut 10 --json
json_ok 'd["jobs"][0]["t_max"] == 80' "jobs JSON: t_max above the highest-power point's throughput"

# ---- jobs JSON: each fault blamed on its field ----
jobs() { printf '{"jobs":[%s]}\n' "$1" > jobs.json; }
jobs '{"name":"a","gpus":8,"p_max":5000},{"name":"b","gpus":8,"p_max":5000},{"name":"a","gpus":8,"p_max":5000}'
row 1 "cannot read 'jobs.json': field 'name': job 3 ('a'): the same name as job 1" \
  allocate jobs.json --cut 10 --strategy equal
jobs '{"name":"a","gpus":8,"p_max":5000,"p_min":6000,"t_max":100,"pfi":1.5}'
row 1 "cannot read 'jobs.json': field 'p_min': job 1 ('a'): above p_max" allocate jobs.json --cut 10
jobs '{"name":"a","gpus":8,"p_max":5000,"t_max":100,"pfi":1.5,"cap_min_w":600,"cap_max_w":300}'
row 1 "cannot read 'jobs.json': field 'cap_min_w': job 1 ('a'): above cap_max_w" \
  allocate jobs.json --cut 10
jobs '{"name":"a","gpus":8,"p_max":5000,"cap_max_w":150}'
row 1 "field 'cap_max_w': job 1 ('a'): below the default cap_min_w (200 W)" \
  allocate jobs.json --cut 10 --strategy equal
jobs '{"name":"a","gpus":8,"p_max":5000,"wieght":2}'
row 1 "cannot read 'jobs.json': field 'wieght': job 1 ('a'): unknown field" \
  allocate jobs.json --cut 10 --strategy equal

# ---- names that are not UTF-8: refused where they are read, with the line ----
printf 'group,gpu,gpus,cap_w,power_w,tokens_per_s\nok,H200,8,700,5000,1000\nok,H200,8,300,2300,600\nb\xffd,H200,8,700,5000,1000\nb\xffd,H200,8,300,2300,600\n' > latin.csv
for cmd in pfi "pfi --json" "allocate --cut 10 --json" "import --db u.db"; do
  # shellcheck disable=SC2086 # the command's words
  row 1 "cannot read 'latin.csv': line 4, column 'group': not UTF-8 text (byte 2 of the field)" \
    ${cmd%% *} latin.csv ${cmd#"${cmd%% *}"}
done
[ ! -e u.db ] || fail "import of a refused file created the store"
printf 'group,gpu,gpus,cap_w,power_w,tokens_per_s,not\xe9\nok,H200,8,700,5000,1000,1\nok,H200,8,300,2300,600,1\n' > header.csv
row 1 "cannot read 'header.csv': line 1: column name 7 is not UTF-8 text" pfi header.csv
printf '{"format": "pflex-runs", "version": 1, "unit": "tokens_per_s", "columns": [], "runs": [\n{"group": "b\xffd", "gpu": "H100", "gpus": 2, "cap_w": 700, "power_w": 1300, "tput": 15000}]}\n' > latin.json
row 1 "cannot read 'latin.json': line 2:" import latin.json --db u.db
row 1 "cannot read 'latin.json': line 2:" pfi latin.json
printf '{"jobs":[\n{"name":"b\xffd","gpus":8,"p_max":5000}]}\n' > latin_jobs.json
row 1 "cannot read 'latin_jobs.json': line 2:" allocate latin_jobs.json --cut 10 --strategy equal

# ---- features, telemetry, model files, runs JSON ----
row 1 "feature 'nosuch': no such column" study --features nosuch --workloads 2
row 1 "feature 'nosuch': no such column" fit "$ref" --features nosuch
sed 's/^24.0,0,615,/24.0,0,-500,/' "$PFLEX_SOURCE_DIR/tests/fuzz/corpus/series_csv/training_2gpu.csv" > series.csv
grep -q '^24.0,0,-500,' series.csv || fail "the series sample to break is not there"
row 1 "cannot read 'series.csv': line 26, column 'power_w': a power must be >= 0 W: -500" \
  aggregate series.csv --group g --gpu-type H200 --cap 700
mkdir modeldir
row 1 "cannot read model 'modeldir': is a directory" predict --model modeldir "$ref"
row 0 "" import "$ref" --db r.db
row 0 "" export --db r.db --format json --out runs.json
row 0 "" pfi "$ref" --draws 200
mv out pfi_csv.txt
row 0 "" pfi runs.json --draws 200
cmp -s out pfi_csv.txt || fail "pfi on the exported runs JSON differs from pfi on the CSV"
row 0 "" pfi "$ref" --draws 200 --set headline
mv out pfi_csv.txt
row 0 "" pfi runs.json --draws 200 --set headline
cmp -s out pfi_csv.txt || fail "pfi --set on the runs JSON differs from pfi --set on the CSV"
row 1 "cannot read 'runs.json': column 'set': no run has set 'nosuch'" pfi runs.json --set nosuch
row 0 "" allocate runs.json --cut 30
out_has "30.0% cut of 283982 W uncapped"

# ---- options: one wording, exit 2, for every command ----
for cmd in pfi stats fit ablation allocate aggregate import export predict study sweep gpus; do
  usage "$cmd" "unknown option '-Z'" "$cmd" -Z
done
for sub in set get restore; do usage cap "unknown option '-Z'" cap "$sub" -Z; done
for sub in reference check population plot; do usage twin "unknown option '-Z'" twin "$sub" -Z; done
usage cap "unknown subcommand 'zz' (set, get, restore)" cap zz
usage cap "missing subcommand (set, get, restore)" cap
usage twin "unknown subcommand 'zz' (reference, check, population, plot)" twin zz
row 2 "error: unknown command 'zz'" zz
[ "$(tail -1 err)" = "try 'pflex help'" ] || fail "unknown command: no pointer to help"
usage allocate "--cut: '0x1e' is not a number from 0 to 100" allocate "$ref" --cut 0x1e
gpus_err="--gpus: 'x' is not a list of GPU indexes such as 0,1 or 0-7"
usage cap "$gpus_err" cap set --gpus x --watts 300
usage cap "$gpus_err" cap get --gpus x
usage cap "$gpus_err" cap restore --gpus x
usage gpus "$gpus_err" gpus --watch 1 --gpus x
usage sweep "$gpus_err" sweep --caps 300,700 --gpus x -- true

# ---- outputs: study makes its directory, sweep never replaces a runs file ----
row 0 "created the output directory" study --workloads 2 --out new/figs
ls new/figs/*.svg > /dev/null 2>&1 || fail "study --out wrote no figures into the new directory"
echo "precious" > runs.csv
usage sweep "'runs.csv' exists: give --out another file, or --force to replace it" \
  sweep --backend sim --caps 300,700 --quiet
[ "$(cat runs.csv)" = precious ] || fail "sweep replaced runs.csv"
row 0 "" sweep --backend sim --caps 300,700 --quiet --force
head -1 runs.csv | grep -q '^group,' || fail "sweep --force did not write runs.csv"
echo "ok"
