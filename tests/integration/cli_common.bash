# Shared set-up of the pflex command tests that work in a scratch directory
# (sourced; the .bash suffix keeps it out of the test glob): checks PFLEX and
# PFLEX_SOURCE_DIR, sets ref (the reference runs CSV), makes and enters a
# temporary directory removed at exit, and defines fail.
set -uo pipefail
: "${PFLEX:?PFLEX must name the pflex program}"
: "${PFLEX_SOURCE_DIR:?PFLEX_SOURCE_DIR must name the source tree}"
ref="$PFLEX_SOURCE_DIR/data/reference/runs.csv"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
