# The commands whose outputs tests/golden/ holds: file name -> pflex arguments,
# run from the source tree. Read by tests/integration/golden.sh and
# tests/golden/regenerate.sh.
declare -gA GOLDEN=(
  [study.json]="study --json"
  [study.txt]="study"
  [study_rounds.json]="study --json --rounds 2 --workloads 40 --cuts 0:40:10"
  [study_family.json]="study --json --shape family --workloads 100"
  [pfi.json]="pfi data/reference/runs.csv --json"
  [pfi.txt]="pfi data/reference/runs.csv"
  [stats.json]="stats data/reference/runs.csv --json"
  [stats_headline.json]="stats data/reference/runs.csv --set headline --json"
  [twin_check.txt]="twin check"
)
