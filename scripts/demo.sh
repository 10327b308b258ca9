#!/usr/bin/env bash
# pflex's main job on its built-in data: installs what is missing, builds, and
# runs the paper's section-6 allocation study on the reconstructed reference
# set (data/reference/runs.csv), writing its figures to out/figures/.
# Extra arguments go to `pflex study` (e.g. --rounds 2, --json).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

bash scripts/install-deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j"$jobs" --target pflex-cli >/dev/null

echo "== pflex twin check: the reference set against every published PFI (paper Tables 6-9)" >&2
./build/pflex twin check >/dev/null
echo "== pflex study: allocation under a cluster power cut (paper section 6)" >&2
mkdir -p out/figures
./build/pflex study --out out/figures "$@"
