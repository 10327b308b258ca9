# Every `pflex` command the README shows runs, verbatim, from a checkout
# (issue 14): each indented line that starts with `pflex ` (a trailing `\`
# joins the next line), in the README's order, in a scratch directory that
# holds the checkout's data/ and examples/ and nothing else, with the built
# pflex first on PATH. GPU commands get the fake NVML with 8 GPUs and a
# scratch state directory (root's /var/lib/pflex is not touched). Each must
# exit 0.
#
# The other command lines are not run here, and each kind is named below so
# that a new one cannot slip by: the two top-level commands (scripts/test.sh
# is what runs this test; scripts/demo.sh builds the tree again), the
# benchmarks (minutes each, bench/), and the daemons' deployment lines
# (pflexd as root with /etc/pflex/token; the agent_*.sh tests run pflexd and
# the same curl call on loopback).
source "$(dirname "$0")/nvml_common.bash"
README="$PFLEX_SOURCE_DIR/README.md"
export PATH="$PFLEX_BINARY_DIR:$PATH"
fake_state 8

not_run='^(bash scripts/(demo|test)\.sh|cmake --build build --target bench|\./build/bench/|bench/|pflexd |curl |-d )'
lines=$(python3 - "$README" <<'EOF'
import sys
out, cur, in_layout = [], "", False
for raw in open(sys.argv[1]):
    line = raw.rstrip("\n")
    if line.startswith("## "):
        in_layout = line.startswith("## Layout")
    if in_layout or not line.startswith("    ") or not line.strip():
        continue
    text = line.strip()
    cur = cur + " " + text if cur else text
    if cur.endswith("\\"):
        cur = cur[:-1].rstrip()
        continue
    out.append(cur)
    cur = ""
print("\n".join(out))
EOF
)

mkdir "$T/work"
ln -s "$PFLEX_SOURCE_DIR/data" "$T/work/data"
ln -s "$PFLEX_SOURCE_DIR/examples" "$T/work/examples"
cd "$T/work"
ran=0
while IFS= read -r cmd; do
  case "$cmd" in
  "pflex "*)
    echo "== $cmd"
    rc=0
    bash -c "$cmd" >"$T/out" 2>&1 || rc=$?
    [ "$rc" = 0 ] || { tail -n 20 "$T/out"; fail "README command exited $rc: $cmd"; }
    ran=$((ran + 1))
    ;;
  *)
    grep -Eq "$not_run" <<<"$cmd" || fail "a README command line this test neither runs nor names: $cmd"
    echo "-- not run: $cmd"
    ;;
  esac
done <<<"$lines"
[ "$ran" -ge 25 ] || fail "only $ran pflex commands found in the README"
# What the commands left behind is what they promised.
for f in figs/fig8.svg figs/fig4.png pop.csv mixed.csv agg.csv pflex.db runs.json model.json caps.json \
  reference/runs.csv curves.svg runs.csv; do
  [ -s "$f" ] || fail "no $f after the README's commands"
done
expect_eq "$(fake_get gpu0.limit_mw)" 700000 "GPU 0 after the README's cap commands"
echo "ok: $ran README commands"
