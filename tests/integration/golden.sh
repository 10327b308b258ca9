#!/usr/bin/env bash
# Behaviour unchanged: the study, PFI, statistics and twin-check outputs on the
# built-in reference set are byte-identical to the committed ones in
# tests/golden/ (captured before the layer renovation of issue 8). A change that
# moves any number fails here; regenerate only for an intended change, with
# tests/golden/regenerate.sh, and say why in the commit.
set -euo pipefail
: "${PFLEX:?PFLEX must name the pflex program}"
: "${PFLEX_SOURCE_DIR:?PFLEX_SOURCE_DIR must name the source tree}"
golden="$PFLEX_SOURCE_DIR/tests/golden"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=../golden/commands.bash
source "$golden/commands.bash"
fails=0
for name in "${!GOLDEN[@]}"; do
  # The study names its input by absolute path; the golden files say REFERENCE.
  (cd "$PFLEX_SOURCE_DIR" && eval "\"\$PFLEX\" ${GOLDEN[$name]}") 2>/dev/null |
    sed "s#$PFLEX_SOURCE_DIR/data/reference/runs.csv#REFERENCE#" > "$tmp/$name"
  if ! cmp -s "$golden/$name" "$tmp/$name"; then
    echo "FAIL: pflex ${GOLDEN[$name]} differs from tests/golden/$name:" >&2
    diff "$golden/$name" "$tmp/$name" | head -20 >&2
    fails=$((fails + 1))
  fi
done
[ "$fails" -eq 0 ] || exit 1
echo "golden: ${#GOLDEN[@]} outputs identical"
