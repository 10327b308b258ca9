# From a plan to the GPUs (issue 14 item 6): `pflex allocate --mapping M
# --caps-out F` gives every mapped GPU its job's cap, and `pflex cap set
# --from F` applies one node's caps all or nothing (fake NVML). Also
# `allocate --set`.
source "$(dirname "$0")/nvml_common.bash"
EX="$PFLEX_SOURCE_DIR/examples"

# The caps file: every GPU of the mapping, each at its job's allocated cap.
"$PFLEX" allocate "$EX/jobs.json" --cut 30 --json >"$T/alloc.json"
"$PFLEX" allocate "$EX/jobs.json" --cut 30 --mapping "$EX/mapping.json" --caps-out "$T/caps.json" \
  >/dev/null 2>"$T/err" || fail "allocate --mapping: $(cat "$T/err")"
grep -q "wrote 36 GPU caps to '$T/caps.json'" "$T/err" || fail "not announced: $(cat "$T/err")"
python3 - "$T/alloc.json" "$T/caps.json" <<'EOF'
import json, sys
alloc = {j["name"]: j for j in json.load(open(sys.argv[1]))["jobs"]}
caps = json.load(open(sys.argv[2]))
assert caps["format"] == "pflex-caps/1" and caps["strategy"] == "optimal", caps
assert caps["provenance"] == json.load(open(sys.argv[1]))["provenance"] == "unknown", caps
per_job = {}
for c in caps["caps"]:
    assert abs(c["cap_w"] - alloc[c["job"]]["cap_w"]) < 1e-6, c
    per_job.setdefault(c["job"], []).append((c["node"], c["gpu"]))
for name, j in alloc.items():
    assert len(per_job[name]) == j["gpus"], (name, per_job[name])
assert ("node02", 7) in per_job["llama-70b-pt"] and per_job["bert-ft"][-1] == ("node05", 3)
EOF
# Caps are limits, not shares: above the target in sum here, and said so with the draw.
total=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); print(round(sum(x["cap_w"] for x in c["caps"])), round(c["target_w"]))' "$T/caps.json")
read -r caps_sum target <<<"$total"
[ "$caps_sum" -gt "$target" ] || fail "caps sum $caps_sum not above the target $target here"
grep -q "note: the caps sum to $caps_sum W, above the target $target W" "$T/err" ||
  fail "caps sum not explained: $(cat "$T/err")"

# Mapping errors name the job (and leave no caps file behind).
bad_map() { # $1: mapping JSON, $2: expected message
  printf '%s\n' "$1" >"$T/map.json"
  rm -f "$T/bad_caps.json"
  local out rc=0
  out=$("$PFLEX" allocate "$EX/jobs.json" --cut 30 --mapping "$T/map.json" \
    --caps-out "$T/bad_caps.json" 2>&1) || rc=$?
  [ "$rc" = 1 ] || fail "mapping $1: exit $rc, expected 1: $out"
  grep -qF "$2" <<<"$out" || fail "mapping $1: expected '$2' in: $out"
  [ ! -e "$T/bad_caps.json" ] || fail "mapping $1: a caps file was written"
}
full='"qwen3-30b-ft": {"n3": [0,1,2,3,4,5,6,7]}, "mixtral-pt": {"n4": [0,1,2,3,4,5,6,7]}, "bert-ft": {"n5": [0,1,2,3]}'
bad_map "{\"jobs\": {$full}}" "job 'llama-70b-pt' (16 GPUs) is not in the mapping"
bad_map "{\"jobs\": {$full, \"llama-70b-pt\": {\"n1\": [0,1,2,3,4,5,6,7]}}}" \
  "job 'llama-70b-pt' runs on 16 GPUs but the mapping gives it 8"
bad_map "{\"jobs\": {$full, \"llama-70b-pt\": {\"n1\": [0,1,2,3,4,5,6,7], \"n2\": [0,1,2,3,4,5,6,7]}, \"lama\": {\"n9\": [0]}}}" \
  "job 'lama' is not among the allocated jobs"
bad_map "{\"jobs\": {$full, \"llama-70b-pt\": {\"n1\": [0,1,2,3,4,5,6,7], \"n5\": [0,1,2,3,4,5,6,7]}}}" \
  "node 'n5' GPU 0 is given twice"
bad_map '{"jobs": {"bert-ft": {"n5": [0, -1]}}}' "job 'bert-ft', node 'n5': a GPU index must be an integer"
bad_map '{"job": {}}' "field 'job': unknown field"
rc=0; "$PFLEX" allocate "$EX/jobs.json" --cut 30 --mapping "$EX/mapping.json" 2>/dev/null || rc=$?
expect_eq "$rc" 2 "--mapping without --caps-out"

# cap set --from: node04's eight GPUs (mixtral-pt) at its cap, all or nothing.
fake_state 8
want=$(python3 -c 'import json,sys; print(round(1000*[c for c in json.load(open(sys.argv[1]))["caps"] if c["node"]=="node04"][0]["cap_w"]))' "$T/caps.json")
out=$("$PFLEX" cap set --from "$T/caps.json" --node node04) || fail "cap set --from: $out"
for g in 0 1 2 3 4 5 6 7; do expect_eq "$(fake_get gpu$g.limit_mw)" "$want" "GPU $g after --from"; done
"$PFLEX" cap restore >/dev/null
for g in 0 7; do expect_eq "$(fake_get gpu$g.limit_mw)" 700000 "GPU $g restored"; done

# A node of the file with more GPUs than this host has: nothing changes.
fake_state 2
msg=$("$PFLEX" cap set --from "$T/caps.json" --node node05 2>&1) && fail "4 caps on 2 GPUs accepted"
grep -q "node 'node05' GPU 2 (job 'bert-ft'): this node has 2 GPUs; nothing changed" <<<"$msg" || fail "$msg"
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 changed by a refused --from"

# A cap outside one GPU's range: refused, the GPUs before it rolled back.
cat >"$T/range.json" <<'EOF'
{"format": "pflex-caps/1", "caps": [{"node": "n", "gpu": 0, "cap_w": 400},
 {"node": "n", "gpu": 1, "cap_w": 150}]}
EOF
msg=$("$PFLEX" cap set --from "$T/range.json" --node n 2>&1) && fail "150 W accepted: $msg"
grep -q "GPU 1: 150.0 W is outside its settable range" <<<"$msg" || fail "$msg"
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 not rolled back"

# Bad caps files and usage errors.
printf '{"format": "pflex-caps/1", "caps": [{"node": "n", "gpu": 0, "cap_w": -5}]}\n' >"$T/neg.json"
msg=$("$PFLEX" cap set --from "$T/neg.json" --node n 2>&1) && fail "negative cap accepted"
grep -q "cap_w" <<<"$msg" || fail "negative cap: $msg"
msg=$("$PFLEX" cap set --from "$T/caps.json" --node nosuch 2>&1) && fail "unknown node accepted"
grep -q "has no caps for node 'nosuch'" <<<"$msg" || fail "$msg"
for args in "--from $T/caps.json --watts 300" "--from $T/caps.json --gpus 0" "--node n --watts 300" ""; do
  rc=0; "$PFLEX" cap set $args >/dev/null 2>&1 || rc=$?
  expect_eq "$rc" 2 "cap set $args"
done

# allocate --set keeps one set of a runs file; without it, a mix is noted.
REF="$PFLEX_SOURCE_DIR/data/reference/runs.csv"
n_all=$("$PFLEX" allocate "$REF" --cut 30 --csv 2>"$T/note" | tail -n +2 | wc -l)
grep -q "holds runs of several sets" "$T/note" || fail "no note on mixed sets: $(cat "$T/note")"
n_head=$("$PFLEX" allocate "$REF" --cut 30 --csv --set headline 2>"$T/note" | tail -n +2 | wc -l)
grep -q "several sets" "$T/note" && fail "a mixed-sets note with --set: $(cat "$T/note")"
[ "$n_head" -lt "$n_all" ] && [ "$n_head" -gt 0 ] || fail "--set headline: $n_head of $n_all jobs"
msg=$("$PFLEX" allocate "$REF" --cut 30 --set nosuch 2>&1) && fail "--set nosuch accepted"
grep -q "column 'set': no run has set 'nosuch'" <<<"$msg" || fail "$msg"
msg=$("$PFLEX" allocate "$EX/jobs.json" --cut 30 --set headline 2>&1) && fail "--set on a jobs file accepted"
grep -q "set applies to a runs CSV" <<<"$msg" || fail "$msg"
echo "ok"
