#!/usr/bin/env bash
# A store left by an import killed with kill -9 in the middle of writing (its
# rollback journal hot: the store file already holds pages of the unfinished
# transaction) opens for reading at once: `pflex export --list` rolls the
# journal back and lists exactly the groups stored before, and an unwritable
# store says why instead of "attempt to write a readonly database".
source "$(dirname "$0")/cli_common.bash"

bash "$PFLEX_SOURCE_DIR/bench/gen_runs.sh" "$PFLEX" 20000 big.csv > /dev/null 2>&1 ||
  fail "cannot generate the runs file"
# The import writes its pages to the store file only at COMMIT (its page
# cache holds them until then): kill it the moment the file starts to grow,
# with the journal of the transaction in place. Each try takes a few seconds.
hot=0
for try in 1 2 3 4 5; do
  rm -f s.db s.db-journal
  "$PFLEX" import "$ref" --db s.db > /dev/null 2>&1 ||
    fail "first import failed"
  "$PFLEX" export --db s.db --list 2> /dev/null | sort > before.txt
  size=$(stat -c %s s.db)
  "$PFLEX" import big.csv --db s.db > /dev/null 2>&1 &
  pid=$!
  while kill -0 "$pid" 2> /dev/null; do
    if [ "$(stat -c %s s.db)" -gt "$size" ]; then
      kill -9 "$pid"
      break
    fi
  done
  wait "$pid" 2> /dev/null
  [ "$?" -eq 137 ] && [ -s s.db-journal ] && { hot=1; break; }
done
[ "$hot" -eq 1 ] || fail "no try killed the import while it wrote the store"
cp s.db ro.db && cp s.db-journal ro.db-journal

"$PFLEX" export --db s.db --list > list.txt 2> err.txt || fail "export --list after kill -9: $(cat err.txt)"
sort list.txt | diff -q - before.txt > /dev/null || fail "the groups differ from those stored before the killed import"
[ ! -s s.db-journal ] || fail "the hot journal is still there"
"$PFLEX" export --db s.db --format csv --out back.csv 2> err.txt || fail "export after recovery: $(cat err.txt)"
[ "$(($(wc -l < back.csv) - 1))" -eq 189 ] || fail "export after recovery: not the 189 runs stored before"

# Without write access the journal cannot be rolled back: say so, and why.
chmod 0444 ro.db ro.db-journal
if [ "$(id -u)" -eq 0 ] && command -v runuser > /dev/null &&
  runuser -u nobody -- test -x "$PFLEX"; then
  chmod 0755 "$tmp"
  runuser -u nobody -- "$PFLEX" export --db "$tmp/ro.db" --list > /dev/null 2> err.txt
  rc=$?
  [ "$rc" -eq 1 ] || fail "read-only hot store: exit $rc"
  grep -q "left mid-write by a process that was killed (hot journal '$tmp/ro.db-journal')" err.txt ||
    fail "read-only hot store: $(cat err.txt)"
else
  echo "note: not root, or pflex not runnable as nobody: the unwritable store is not checked"
fi
echo ok
