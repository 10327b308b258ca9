#!/usr/bin/env bash
# Provenance end to end (docs/formats.md, "Provenance"): every command's
# table, --csv and --json say where their numbers come from, carried from the
# input and never upgraded: the reference set stays reconstructed through
# import, export and back; a mix is its weakest member; a file that does not
# say is unknown, never measured; model files and jobs JSON carry it; the
# figures say it in real SVG text.
set -euo pipefail
: "${PFLEX:?PFLEX must name the pflex program}"
src="${PFLEX_SOURCE_DIR:?}"
ref="$src/data/reference/runs.csv"
tmp=$(mktemp -d /tmp/pflex-provenance.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
unset PFLEX_DB

fail() { echo "FAIL: $*" >&2; exit 1; }
# line FILE WORD: the table line says WORD.
line() { grep -q "^provenance: $2\b" "$1" || fail "$1: no 'provenance: $2' line: $(grep -m1 '^provenance' "$1" || echo none)"; }
# csvcol FILE WORD: a provenance column, WORD in every row.
csvcol() {
  python3 - "$1" "$2" <<'PY' || fail "$1: provenance column is not '$2' in every row"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows and all(r["provenance"] == sys.argv[2] for r in rows), rows[:2]
PY
}
# field FILE JQPATH WORD: the JSON field says WORD.
field() {
  jq -e --arg w "$3" "$2 == \$w" "$1" >/dev/null || fail "$1: $2 is $(jq -c "$2" "$1"), not $3"
}

# Inputs: the reference (reconstructed); the same runs declared measured; the
# same with one group simulated (a mix); the same without the column (an old
# file: unknown).
cp "$ref" recon.csv
sed 's/,reconstructed,/,measured,/' "$ref" > measured.csv
awk -F, 'NR > 1 && $1 == "Dense FT H200x16 Llama-3.1-70B" { sub(/,measured,/, ",simulated,") } { print }' \
  measured.csv > mixed.csv
grep -q ',simulated,' mixed.csv || fail "test set-up: no simulated run in mixed.csv"
python3 - <<'PY'
import csv
rows = list(csv.DictReader(open("recon.csv")))
cols = [c for c in rows[0] if c != "provenance"]
with open("old.csv", "w", newline="") as f:
    w = csv.DictWriter(f, cols, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
PY

# --- pfi: table, --csv, --json ---------------------------------------------------------
for k in recon:reconstructed measured:measured mixed:simulated old:unknown; do
  f=${k%%:*} w=${k#*:}
  "$PFLEX" pfi "$f.csv" > "$f.pfi.txt" 2>/dev/null
  line "$f.pfi.txt" "$w"
  "$PFLEX" pfi "$f.csv" --json > "$f.pfi.json" 2>/dev/null
done
"$PFLEX" pfi recon.csv --csv > recon.pfi.csv 2>/dev/null
csvcol recon.pfi.csv reconstructed
# per group: the mix's simulated group says so, the others stay measured
jq -e '[.[] | select(.group == "Dense FT H200x16 Llama-3.1-70B") | .provenance] == ["simulated"]
       and ([.[] | select(.group != "Dense FT H200x16 Llama-3.1-70B") | .provenance] | unique) == ["measured"]' \
  mixed.pfi.json >/dev/null || fail "pfi --json per group on the mix"
jq -e '[.[].provenance] | unique == ["unknown"]' old.pfi.json >/dev/null || fail "old file: not unknown"
! grep -q "^provenance: measured" old.pfi.txt || fail "a file without provenance is called measured"

# --- stats -----------------------------------------------------------------------------
"$PFLEX" stats recon.csv > s.txt 2>/dev/null && line s.txt reconstructed
"$PFLEX" stats mixed.csv --json > s.json 2>/dev/null && field s.json .provenance simulated

# --- allocate: runs and jobs JSON ------------------------------------------------------
"$PFLEX" allocate recon.csv --cut 30 > a.txt 2>/dev/null && line a.txt reconstructed
"$PFLEX" allocate recon.csv --cut 30 --csv > a.csv 2>/dev/null && csvcol a.csv reconstructed
"$PFLEX" allocate mixed.csv --cut 30 --json > a.json 2>/dev/null && field a.json .provenance simulated
cat > jobs.json <<'JSON'
{"provenance": "simulated", "jobs": [
  {"name": "a", "gpus": 8, "p_max": 5600, "pfi": 1.5, "t_max": 1000},
  {"name": "b", "gpus": 8, "p_max": 5600, "pfi": 2.0, "t_max": 1000}]}
JSON
"$PFLEX" allocate jobs.json --cut 20 --strategy pfi --json > j.json 2>/dev/null
field j.json .provenance simulated
jq 'del(.provenance)' jobs.json > jobs_old.json
"$PFLEX" allocate jobs_old.json --cut 20 --strategy pfi --json > j.json 2>/dev/null
field j.json .provenance unknown
jq '.provenance = "measurd"' jobs.json > jobs_bad.json
set +e
"$PFLEX" allocate jobs_bad.json --cut 20 --strategy pfi > out 2> err
rc=$?
set -e
[ $rc -eq 1 ] && grep -q "jobs_bad.json.*provenance" err || fail "bad jobs provenance: rc $rc, $(cat err)"

# --- fit / predict: the model file carries it; predict combines ------------------------
"$PFLEX" fit recon.csv --set headline --out m.json > fit.txt 2>/dev/null
field m.json .provenance reconstructed
line fit.txt reconstructed
"$PFLEX" fit measured.csv --set headline --out mm.json > /dev/null 2>&1
field mm.json .provenance measured
"$PFLEX" predict --model mm.json measured.csv --json > p.json 2>/dev/null && field p.json .provenance measured
"$PFLEX" predict --model m.json measured.csv --json > p.json 2>/dev/null && field p.json .provenance reconstructed
"$PFLEX" predict --model mm.json measured.csv --csv > p.csv 2>/dev/null && csvcol p.csv measured
jq 'del(.provenance)' mm.json > m_old.json # a model file from before provenance: unknown
"$PFLEX" predict --model m_old.json measured.csv > p.txt 2>/dev/null && line p.txt unknown

# --- ablation, twin check --------------------------------------------------------------
"$PFLEX" ablation recon.csv --set headline > ab.txt 2>/dev/null && line ab.txt reconstructed
"$PFLEX" ablation recon.csv --set headline --csv > ab.csv 2>/dev/null && csvcol ab.csv reconstructed
"$PFLEX" twin check > tc.txt 2>/dev/null && line tc.txt reconstructed
"$PFLEX" twin check --csv > tc.csv 2>/dev/null && csvcol tc.csv reconstructed
"$PFLEX" twin check --json > tc.json 2>/dev/null && field tc.json .provenance reconstructed
"$PFLEX" twin population --jobs 3 --seed 2 --out pop.csv > /dev/null 2>&1
"$PFLEX" pfi pop.csv > pop.txt 2>/dev/null && line pop.txt simulated

# --- import, export, read back: never upgraded -----------------------------------------
"$PFLEX" import mixed.csv --db s.db > imp.txt 2>/dev/null
grep -q "provenance simulated" imp.txt || fail "import summary: $(cat imp.txt)"
"$PFLEX" export --db s.db --out back.csv > /dev/null 2>&1
"$PFLEX" export --db s.db --format json --out back.json > /dev/null 2>&1
"$PFLEX" export --db s.db --group "MoE FT H100x8 Qwen3-30B-A3B" --out one.csv > /dev/null 2>&1
"$PFLEX" pfi back.csv > b.txt 2>/dev/null && line b.txt simulated
"$PFLEX" pfi one.csv > b.txt 2>/dev/null && line b.txt measured
"$PFLEX" import recon.csv --db r.db > /dev/null 2>&1
"$PFLEX" export --db r.db --format json --out r.json > /dev/null 2>&1
"$PFLEX" import r.json --db r2.db > /dev/null 2>&1
"$PFLEX" export --db r2.db --out r2.csv > /dev/null 2>&1
"$PFLEX" pfi r2.csv --csv > b.csv 2>/dev/null && csvcol b.csv reconstructed

# svgtext SVG: the text of its <text> elements, one per line (PLplot's svg
# driver writes characters as XML references, which an XML reader decodes).
svgtext() {
  python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
texts = [e for e in ET.parse(sys.argv[1]).iter() if e.tag.endswith("}text") or e.tag == "text"]
assert texts, "no <text> elements"
for e in texts:
    print("".join(e.itertext()))
PY
}

# --- study: table, JSON, figures (real SVG text: title and provenance) -----------------
"$PFLEX" study recon.csv --workloads 4 --jobs 10 --cuts 0,30 > st.txt 2>/dev/null
line st.txt reconstructed
grep -q "true = PFI of the runs (reconstructed)" st.txt || fail "study: 'true' not labelled by provenance"
! grep -q "true = measured" st.txt || fail "study calls modelled PFIs measured"
"$PFLEX" study recon.csv --workloads 4 --jobs 10 --cuts 0,30 --json > st.json 2>/dev/null
field st.json .provenance reconstructed
"$PFLEX" study measured.csv --train mixed.csv --workloads 4 --jobs 10 --cuts 0,30 --json > st2.json 2>/dev/null
field st2.json .provenance simulated
# The truth is the runs' own (measured), whatever the training file was.
field st2.json .truth_provenance measured
"$PFLEX" study measured.csv --train mixed.csv --workloads 4 --jobs 10 --cuts 0,30 > st2.txt 2>/dev/null
grep -q "true = PFI of the runs (measured)" st2.txt || fail "study --train: truth labelled by the training file"
"$PFLEX" study recon.csv --workloads 4 --jobs 10 --cuts 0,20,30 --out f0 > /dev/null 2>&1
"$PFLEX" study recon.csv --workloads 4 --jobs 10 --cuts 0,20,30 --rounds 1 --out f1 > /dev/null 2>&1
for f in f0/fig8 f0/fig4 f1/fig8; do
  svgtext "$f.svg" > "$f.txt" || fail "$f.svg: no <text> elements (text drawn as paths?)"
  grep -q '^data: reconstructed (modelled from published numbers, not measured)' "$f.txt" ||
    fail "$f.svg: no provenance note"
done
grep -qx 'Throughput relative to the oracle, by cluster power cut' f0/fig8.txt || fail "fig8: no title"
grep -q '^PFI by sweep group' f0/fig4.txt || fail "fig4: no title"
grep -qx 'Dense FT H200x16 Llama-3.1-70B' f0/fig4.txt || fail "fig4: groups not named on the axis"
grep -qx 'PFI of the runs (reconstructed)' f0/fig4.txt || fail "fig4: runs' PFI not labelled by provenance"
! grep -qx 'measured' f0/fig4.txt || fail "fig4 labels modelled PFIs measured"
grep -q 'closed loop by round' f1/fig8.txt || fail "--rounds 1: fig8 shows no closed loop"
grep -qx 'loo, round 1' f1/fig8.txt || fail "--rounds 1: no round-1 line in fig8's legend"
! grep -q 'closed loop by round' f0/fig8.txt || fail "open loop fig8 has a closed-loop row"
! cmp -s f0/fig8.png f1/fig8.png || fail "--rounds 1: fig8.png identical to the open loop's"
"$PFLEX" twin plot --out c.svg measured.csv > /dev/null 2>&1
svgtext c.svg | grep -qx 'data: measured' || fail "twin plot: no provenance note"
echo ok
