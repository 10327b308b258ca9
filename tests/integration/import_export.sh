#!/usr/bin/env bash
# End to end: pflex import / pflex export through the SQLite store.
# CSV -> store -> CSV and CSV -> store -> JSON -> store -> CSV must give back the
# same runs (values compared by column name, numbers numerically, other cells
# verbatim; the comparison parses CSV with the sqlite3 shell, not with pflex).
# Failed imports (bad CSV, conflicting group, duplicate cap) must leave the
# store byte-for-byte as it was (compared as an SQL dump).
set -euo pipefail
: "${PFLEX:?PFLEX must name the pflex program}"
tmp=$(mktemp -d /tmp/pflex-import-export.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
unset PFLEX_DB

fail() { echo "FAIL: $*" >&2; exit 1; }

# expect STATUS CMD...: runs CMD, checks its exit status, keeps stdout/stderr in out/err.
expect() {
  local want=$1; shift
  set +e
  "$@" >out 2>err
  local got=$?
  set -e
  [ "$got" -eq "$want" ] || { cat err >&2; fail "'$*' exited $got, expected $want"; }
}

# same_runs A.csv B.csv: same header names (any order), same rows (any order).
same_runs() {
  local a=$1 b=$2
  diff <(head -1 "$a" | tr ',' '\n' | sort) <(head -1 "$b" | tr ',' '\n' | sort) >/dev/null ||
    fail "columns differ: $(head -1 "$a") vs $(head -1 "$b")"
  rm -f cmp.db
  sqlite3 cmp.db ".import --csv $a a" ".import --csv $b b"
  local cond="" c
  for c in $(head -1 "$a" | tr ',' ' '); do
    case $c in
      gpus|cap_w|power_w|tokens_per_s|samples_per_s|power_sd|tokens_sd|seq_len|batch|ep|compile|grad_ckpt)
        cond="$cond AND (a.\"$c\" = '') = (b.\"$c\" = '') AND CAST(a.\"$c\" AS REAL) = CAST(b.\"$c\" AS REAL)" ;;
      *) cond="$cond AND a.\"$c\" = b.\"$c\"" ;;
    esac
  done
  local na nb nmatch
  na=$(sqlite3 cmp.db "SELECT count(*) FROM a")
  nb=$(sqlite3 cmp.db "SELECT count(*) FROM b")
  nmatch=$(sqlite3 cmp.db "SELECT count(*) FROM a WHERE EXISTS (SELECT 1 FROM b WHERE 1 $cond)")
  [ "$na" -eq "$nb" ] || fail "$a has $na runs, $b has $nb"
  [ "$nmatch" -eq "$na" ] || fail "only $nmatch of $na runs of $a are in $b"
}

dump() { sqlite3 "$1" .dump; }

cat >runs.csv <<'EOF'
group,gpu,gpus,cap_w,power_w,tokens_per_s,power_sd,tokens_sd,model,arch,task,seq_len,compile,set,dram_active,note
llama-pt,H200,8,700,5000.50,1000.25,12.5,3.1,llama-8b,dense,pt,4096,1,headline,0.420,"warm, then steady"
llama-pt,H200,8,400,3100,900.125,,2,llama-8b,dense,pt,4096,1,headline,0.40,
mix-ft,H100,4,700,2500,400,1,1,mixtral,moe,ft,,0,validation,,"say ""hi"""
llama-pt,H200,8,200,1650.25,480.0625,8,2,llama-8b,dense,pt,4096,1,headline,0.31,
mix-ft,H100,4,300,1200,300.333333333333314,1,1,mixtral,moe,ft,,0,validation,0.3,
EOF

# --- import, then export to a file and to standard output
expect 0 "$PFLEX" import runs.csv --db a.db
grep -q "using store 'a.db'" err || fail "import does not say which store it used"
grep -q "imported 5 runs in 2 groups" out || fail "import summary: $(cat out)"
expect 0 "$PFLEX" export --db a.db --out back.csv
same_runs runs.csv back.csv
expect 0 "$PFLEX" export --db a.db
cmp -s out back.csv || fail "export to stdout differs from export --out"

# --- the default store: $PFLEX_DB, else ./pflex.db
expect 0 env PFLEX_DB=env.db "$PFLEX" import runs.csv
[ -s env.db ] || fail "PFLEX_DB was not used"
expect 0 "$PFLEX" import runs.csv
[ -s pflex.db ] && grep -q "using store 'pflex.db'" err || fail "./pflex.db is not the default"

# --- JSON: store -> JSON -> another store -> CSV
expect 0 "$PFLEX" export --db a.db --format json --out back.json
grep -q '"format": "pflex-runs"' back.json || fail "not a runs JSON document"
expect 0 "$PFLEX" import back.json --db j.db
# --json is --format json, as in the other commands; contradicting --format is a usage error.
expect 0 "$PFLEX" export --db a.db --json
cmp -s out back.json || fail "export --json differs from --format json --out"
expect 2 "$PFLEX" export --db a.db --json --format csv
expect 0 "$PFLEX" export --db j.db --out back2.csv
same_runs runs.csv back2.csv
# allocate takes the runs JSON as runs (one job per group), as the CSV, not as a jobs file
expect 0 "$PFLEX" allocate back.json --cut 20
mv out alloc_json.txt
expect 0 "$PFLEX" allocate runs.csv --cut 20
sed 's/back\.json/runs.csv/g' alloc_json.txt | cmp -s - out ||
  fail "allocate on the runs JSON differs from allocate on the CSV: $(diff alloc_json.txt out)"
expect 1 "$PFLEX" allocate back.json --cut 20 --set nosuch
grep -q "jobs file" err && fail "a runs JSON taken for a jobs file: $(cat err)"

# --- one group only
expect 0 "$PFLEX" export --db a.db --group mix-ft --out mix.csv
[ "$(wc -l <mix.csv)" -eq 3 ] || fail "--group mix-ft: expected a header and 2 runs"
expect 1 "$PFLEX" export --db a.db --group nosuch
grep -q "no group 'nosuch'" err || fail "unknown group message: $(cat err)"

# --- failed imports leave the store exactly as it was
before=$(dump a.db)
cat >bad.csv <<'EOF'
group,gpu,gpus,cap_w,power_w,tokens_per_s
new-one,H200,8,700,5000,100
new-one,H200,8,300,abc,60
EOF
expect 1 "$PFLEX" import bad.csv --db a.db
grep -q "line 3" err || fail "bad CSV error does not name the line: $(cat err)"
[ "$(dump a.db)" = "$before" ] || fail "a bad CSV changed the store"

cat >conflict.csv <<'EOF'
group,gpu,gpus,cap_w,power_w,tokens_per_s
new-one,H200,8,700,5000,100
mix-ft,H100,4,500,2000,350
mix-ft,H100,4,700,2500,400
EOF
expect 1 "$PFLEX" import conflict.csv --db a.db
grep -q "group 'mix-ft' is already stored" err || fail "conflict message: $(cat err)"
grep -q "nothing was imported" err || fail "conflict does not say nothing was imported"
[ "$(dump a.db)" = "$before" ] || fail "a conflicting import changed the store"

# --append to a group needs its configuration; this file lacks mix-ft's model
expect 1 "$PFLEX" import conflict.csv --db a.db --append
grep -q "'model' differs from the stored group's" err || fail "append config message: $(cat err)"
[ "$(dump a.db)" = "$before" ] || fail "a refused append changed the store"

# --append: new-one is written first, then mix-ft's 700 W run is already stored
cat >append.csv <<'EOF'
group,gpu,gpus,cap_w,power_w,tokens_per_s,model,arch,task,compile,set
new-one,H200,8,700,5000,100,,,,,
mix-ft,H100,4,500,2000,350,mixtral,moe,ft,0,validation
mix-ft,H100,4,700,2500,400,mixtral,moe,ft,0,validation
EOF
expect 1 "$PFLEX" import append.csv --db a.db --append
grep -q "already has a run at cap 700" err || fail "duplicate cap message: $(cat err)"
[ "$(dump a.db)" = "$before" ] || fail "a failed append changed the store"
# (A successful --append of new caps to a stored group: further below.)

# --replace succeeds and replaces mix-ft
expect 0 "$PFLEX" import conflict.csv --db a.db --replace
grep -q "1 new, 1 replaced" out || fail "replace summary: $(cat out)"
expect 0 "$PFLEX" export --db a.db --group mix-ft --out mix2.csv
[ "$(wc -l <mix2.csv)" -eq 3 ] && grep -q "^mix-ft,H100,4,500,2000,350" mix2.csv ||
  fail "mix-ft was not replaced: $(cat mix2.csv)"

# --- stores that cannot be used
expect 1 "$PFLEX" import runs.csv --db "$tmp/no/such/dir/x.db"
grep -q "error: cannot open store" err || fail "unopenable store message: $(cat err)"
expect 1 "$PFLEX" import runs.csv --db "$tmp"
expect 1 "$PFLEX" export --db missing.db
[ ! -e missing.db ] || fail "export created a store"
sqlite3 future.db "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, summary TEXT NOT NULL,
  applied_at TEXT NOT NULL); INSERT INTO schema_version VALUES (999, 'future', 'x');"
expect 1 "$PFLEX" import runs.csv --db future.db
grep -q "schema version 999 is newer" err || fail "newer schema message: $(cat err)"
echo "not a database at all" >junk.db
expect 1 "$PFLEX" export --db junk.db
grep -q "not a pflex store" err || fail "junk store message: $(cat err)"

# --- --append from a CSV that holds only new caps of a stored group
printf 'group,gpu,gpus,cap_w,power_w,tokens_per_s\nap,H200,8,700,5000,100\nap,H200,8,300,2500,70\n' >ap1.csv
printf 'group,gpu,gpus,cap_w,power_w,tokens_per_s\nap,H200,8,500,4000,92\n' >ap2.csv
expect 0 "$PFLEX" import ap1.csv --db ap.db
expect 1 "$PFLEX" import ap2.csv --db ap.db
grep -q "no uncapped run" err || fail "import of a partial group without --append: $(cat err)"
expect 0 "$PFLEX" import ap2.csv --db ap.db --append
expect 0 "$PFLEX" export --db ap.db --group ap
[ "$(grep -c '^ap,' out)" -eq 3 ] || fail "append: expected 3 runs, got $(cat out)"
grep -q '^ap,H200,8,500,4000,92$' out || fail "appended run missing: $(cat out)"

# --- a JSON file obeys the CSV's group rules: an uncapped run (unless --append),
# no cap twice (not a conflict with the store: no --replace hint)
expect 0 "$PFLEX" export --db ap.db --group ap --json
cp out ap.json
sed -e 's/"cap_w": 700.0/"cap_w": 600.0/' ap.json >nounc.json
expect 1 "$PFLEX" import nounc.json --db j2.db
grep -q "cannot read 'nounc.json': column 'cap_w': run [0-9]: group 'ap' has no uncapped run" err ||
  fail "JSON without an uncapped run: $(cat err)"
[ ! -e j2.db ] || fail "a refused JSON import created the store"
sed -e 's/"cap_w": 500.0/"cap_w": 300.0/' ap.json >twice.json
expect 1 "$PFLEX" import twice.json --db j2.db
grep -q "has cap 300 W twice (runs [0-9] and [0-9])" err || fail "JSON cap twice: $(cat err)"
! grep -q -- "--replace" err || fail "cap twice in a file is not a store conflict: $(cat err)"

# --- a schema 1 store (one run_extras row per cell, as pflex wrote before
# schema 2) is migrated by the next write and exports the same bytes: v1.db is
# the import of runs.csv rewritten into schema 1 with the sqlite3 shell.
expect 0 "$PFLEX" import runs.csv --db v2.db
expect 0 "$PFLEX" export --db v2.db --out v2.csv
sqlite3 v1.db "
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, summary TEXT NOT NULL, applied_at TEXT NOT NULL);
INSERT INTO schema_version VALUES (1, 'groups, runs, run extras, telemetry samples', 'x');
ATTACH 'v2.db' AS v2;
CREATE TABLE groups AS SELECT * FROM v2.groups;
CREATE TABLE runs AS SELECT id, group_id, cap_w, power_w, tput, power_sd, tput_sd, source_line FROM v2.runs;
CREATE TABLE run_extras (run_id INTEGER NOT NULL, position INTEGER NOT NULL, name TEXT NOT NULL,
  value TEXT NOT NULL, PRIMARY KEY (run_id, name)) WITHOUT ROWID;
INSERT INTO run_extras SELECT r.id, v.key, n.value, v.value FROM v2.runs r
  JOIN v2.extra_columns c ON c.id = r.extra_columns_id, json_each(r.extras) v, json_each(c.names) n
  WHERE n.key = v.key;
CREATE TABLE metrics (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE samples (run_id INTEGER NOT NULL, metric_id INTEGER NOT NULL, gpu INTEGER NOT NULL,
  time_s REAL NOT NULL, value REAL NOT NULL);"
[ "$(sqlite3 v1.db 'SELECT count(*) FROM run_extras')" -eq 10 ] || fail "v1 store: expected 10 extras"
expect 1 "$PFLEX" export --db v1.db
grep -q "schema version 1 is older" err || fail "read-only open of a v1 store: $(cat err)"
grep -q "pflex import --migrate --db 'v1.db'" err || fail "the refusal does not say how to migrate"
# import --migrate alone migrates it, and the migrated store exports what v2 gave.
cp v1.db v1m.db
expect 0 "$PFLEX" import --migrate --db v1m.db
grep -q "store 'v1m.db' is at schema version 2" out || fail "import --migrate: $(cat out)"
expect 0 "$PFLEX" export --db v1m.db --out v1m.csv
cmp v2.csv v1m.csv || fail "the store migrated alone exports differently"
expect 0 "$PFLEX" import --migrate --db v1m.db --json
[ "$(jq .schema_version out)" -eq 2 ] || fail "import --migrate --json: $(cat out)"
expect 1 "$PFLEX" import --migrate --db no-such.db
[ ! -e no-such.db ] || fail "import --migrate created a store"
expect 2 "$PFLEX" import --migrate runs.csv --db v1m.db
expect 2 "$PFLEX" import --migrate --append --db v1m.db
expect 0 "$PFLEX" import ap1.csv --db v1.db
[ "$(sqlite3 v1.db 'SELECT max(version) FROM schema_version')" -eq 2 ] || fail "v1 store not migrated"
[ "$(sqlite3 v1.db "SELECT count(*) FROM sqlite_schema WHERE name = 'run_extras'")" -eq 0 ] ||
  fail "run_extras left after the migration"
expect 0 "$PFLEX" export --db v1.db --group llama-pt --group mix-ft --out v1back.csv
cmp v2.csv v1back.csv || fail "the migrated v1 store exports differently"

# --- usage errors
expect 2 "$PFLEX" import runs.csv --replace --append
expect 2 "$PFLEX" import
expect 2 "$PFLEX" export --format xml
expect 0 "$PFLEX" help import
grep -q -- "--append" out || fail "help import lacks --append"

echo "import_export: all checks passed"
