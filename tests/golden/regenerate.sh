#!/usr/bin/env bash
# Rewrites tests/golden/ from the built program (build/pflex). Only for an
# intended change of results; say why in the commit.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
PFLEX="${PFLEX:-$root/build/pflex}"
source "$root/tests/golden/commands.bash"
cd "$root"
for name in "${!GOLDEN[@]}"; do
  eval "\"\$PFLEX\" ${GOLDEN[$name]}" 2>/dev/null | sed "s#$root/data/reference/runs.csv#REFERENCE#" > "tests/golden/$name"
done
