#!/usr/bin/env bash
# Progress of long work (study, import, pfi, sweep) on stderr: at a terminal
# (a pseudo-terminal from util-linux's script) one line redrawn in place,
# at most 10 times a second, ending at 100% and erased at the end; with
# stderr a file, not one byte of it, and stdout the same either way.
source "$(dirname "$0")/cli_common.bash"
command -v script > /dev/null || fail "script (util-linux) is needed"

# at_tty NAME CMD: runs CMD (a shell line; its stdout to NAME.out) with
# stderr on a pseudo-terminal, whose output goes to NAME.tty; NAME.s the
# seconds it took.
at_tty() {
  local start=$EPOCHREALTIME
  script -qec "$2 > $1.out" /dev/null > "$1.tty" < /dev/null || fail "$2 at a terminal failed: $(cat "$1.tty")"
  python3 -c "print($EPOCHREALTIME - $start)" > "$1.s"
}

# check_line NAME LABEL WHAT TOTAL: NAME.tty redraws "LABEL: WHAT k/TOTAL" in
# place, no more than 10 times a second (plus the first and the last), the
# last at TOTAL/TOTAL (100%), then erases it.
check_line() {
  python3 - "$@" << 'PY' || fail "progress of $1: see above"
import sys
name, label, what, total = sys.argv[1:5]
tty = open(name + ".tty", encoding="utf-8", errors="replace", newline="").read()
secs = float(open(name + ".s").read())
head = "\r\x1b[K" + label + ": " + what + " "
draws = tty.count(head)
assert draws >= 1, ("no progress line", tty[:300])
assert draws <= 10 * secs + 2, ("more than 10 redraws a second", draws, secs)
last = tty.rfind(head)
tail = tty[last + len(head):]
assert tail.startswith(f"{total}/{total} (100%)"), ("the last draw is not 100%", tail[:60])
# Erased at the end: an erase follows the last draw, before any other text.
rest = tail.split("\r\x1b[K", 1)
assert len(rest) == 2 and "\n" not in rest[0], ("the line is not erased", tail[:120])
assert "\n" not in tty[tty.find(head):last], "the progress line scrolls instead of redrawing"
print(f"{name}: {draws} draws in {secs:.1f} s")
PY
}

# quiet NAME CMD: with stderr a file CMD prints no progress, and the same stdout.
quiet() {
  sh -c "$2 > $1.plain.out 2> $1.err" || fail "$2 failed: $(cat "$1.err")"
  ! grep -q $'\r\|\033' "$1.err" || fail "$1: control characters on a stderr that is a file"
  ! grep -qE '(workloads|groups) [0-9]+/' "$1.err" || fail "$1: progress on a stderr that is a file"
  cmp -s "$1.out" "$1.plain.out" || fail "$1: stdout differs at a terminal"
}

at_tty study "$PFLEX study --workloads 60"
check_line study study workloads 120 # two scenarios
quiet study "$PFLEX study --workloads 60"

at_tty import "$PFLEX import $ref --db t.db"
check_line import import groups 35
rm -f t.db
quiet import "$PFLEX import $ref --db t.db"

at_tty pfi "$PFLEX pfi $ref --draws 20000"
check_line pfi pfi groups 35
quiet pfi "$PFLEX pfi $ref --draws 20000"

# The sweep's line goes through the same printer, erased before the summary
# (the sim backend's clock is virtual: a few draws); --quiet turns it off.
at_tty sweep "$PFLEX sweep --backend sim --caps 300,700 --out s1.csv"
python3 - << 'PY' || fail "sweep progress: see above"
t = open("sweep.tty", newline="").read()
assert "\r\x1b[K[run 1/2] cap 300 W" in t, t[-300:]
assert "\r\x1b[Krestored 8 GPUs" in t, ("the line is not erased before the summary", t[-300:])
PY
at_tty sweepq "$PFLEX sweep --backend sim --caps 300,700 --out s2.csv --quiet"
! grep -q '\[run ' sweepq.tty || fail "sweep --quiet drew progress"
echo ok
