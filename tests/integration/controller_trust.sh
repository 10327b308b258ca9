# pflex-controller refuses, at start, every file it reads that another local
# user could write (it holds the token that commands every pflexd): a config,
# agents file or schedule file that is group/other-writable, owned by another
# user, or in a directory others can write without the sticky bit; the same
# for the templates CSV and the model JSON, and token files others may read
# or write. Each is refused with exit 2, the file named with its owner or
# mode and the fix (the wording pflexd uses too, agent_trust.sh); the right
# modes are accepted.
source "$(dirname "$0")/controller_common.bash"

umask 022
echo "agent-token-for-tests-0001" > "$T/atok"; chmod 600 "$T/atok"
echo "controller-token-for-tests-1" > "$T/ctok"; chmod 600 "$T/ctok"
# No agent needs to answer: the controller starts and counts it unreachable.
echo "http://127.0.0.1:$(free_port)" > "$T/agents"
echo '{"events":[]}' > "$T/schedule.json"
cp "$PFLEX_SOURCE_DIR/data/reference/runs.csv" "$T/sweeps.csv"
"$PFLEX" fit "$T/sweeps.csv" --out "$T/model.json" > /dev/null
CPORT=$(free_port)
cat > "$T/ctl.conf" <<CONF
[controller]
listen = 127.0.0.1:$CPORT
token_file = $T/ctok
agents_file = $T/agents
agent_token_file = $T/atok
state_db = $T/ctl.db
schedule_file = $T/schedule.json
templates_file = $T/sweeps.csv
model_file = $T/model.json
round_s = 0.2
agent_timeout_s = 0.1
CONF
chmod 640 "$T/ctl.conf"; chmod 644 "$T/agents" "$T/schedule.json" "$T/sweeps.csv" "$T/model.json"

# refused FILE WHY: the controller exits ${WANT:-2} at once, naming FILE and WHY.
refused() {
  local file=$1 why=$2 out rc=0
  out=$(timeout 20 "$CTL" --config "$T/ctl.conf" 2>&1) || rc=$?
  [ "$rc" = "${WANT:-2}" ] || fail "$file ($why): exit $rc, want ${WANT:-2}: $out"
  # "error: 'FILE': WHY", or for a token file "error: refusing token file 'FILE': WHY"
  echo "$out" | grep -q "^error: " && echo "$out" | grep -qF "'$file': $why" ||
    fail "$file: message: $out"
}

# accepted: the controller starts, reads everything and serves its API.
accepted() {
  "$CTL" --config "$T/ctl.conf" > "$T/ctl.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  wait_until 10 curl -sf "127.0.0.1:$CPORT/v1/health" ||
    fail "controller did not start with good modes ($1): $(cat "$T/ctl.log")"
  kill -TERM "$pid"
  wait "$pid" || fail "controller exit $? on SIGTERM ($1)"
}

accepted "0640 config, 0644 agents, schedule, templates and model"

chmod 666 "$T/ctl.conf"
refused "$T/ctl.conf" "mode 0666 lets other users write it; use chmod go-w"
chmod 660 "$T/ctl.conf"
refused "$T/ctl.conf" "mode 0660 lets other users write it; use chmod go-w"
chmod 600 "$T/ctl.conf"

chmod 666 "$T/agents"
refused "$T/agents" "mode 0666 lets other users write it; use chmod go-w"
chmod 644 "$T/agents"

chmod 666 "$T/schedule.json"
refused "$T/schedule.json" "mode 0666 lets other users write it; use chmod go-w"
chmod 644 "$T/schedule.json"

for f in sweeps.csv model.json; do
  chmod 664 "$T/$f"
  refused "$T/$f" "mode 0664 lets other users write it; use chmod go-w"
  chmod 644 "$T/$f"
done

# Owned by another user (the tests run as root; nobody is uid 65534).
NOBODY=$(id -u nobody)
chown nobody "$T/agents"
refused "$T/agents" "owned by uid $NOBODY, not by root; use chown root"
chown 0 "$T/agents"
chown nobody "$T/ctl.conf"
refused "$T/ctl.conf" "owned by uid $NOBODY, not by root; use chown root"
chown 0 "$T/ctl.conf"

# A directory others can write: they could swap the file. With the sticky
# bit (like /tmp) they cannot rename or remove ours: accepted.
mkdir "$T/d"
mv "$T/agents" "$T/d/agents"
sed -i "s|^agents_file = .*|agents_file = $T/d/agents|" "$T/ctl.conf"
chmod 777 "$T/d"
refused "$T/d/agents" "its directory '$T/d': mode 0777 lets other users write it; use chmod go-w"
chmod 775 "$T/d"
refused "$T/d/agents" "its directory '$T/d': mode 0775 lets other users write it; use chmod go-w"
chmod 755 "$T/d"; chown nobody "$T/d"
refused "$T/d/agents" "its directory '$T/d': owned by uid $NOBODY, not by root; use chown root"
chown 0 "$T/d"
chmod 1777 "$T/d"
accepted "agents file in a sticky 1777 directory"
chmod 755 "$T/d"

# A symbolic link is not followed: a user could point it elsewhere later.
ln -s "$T/d/agents" "$T/agents.link"
sed -i "s|^agents_file = .*|agents_file = $T/agents.link|" "$T/ctl.conf"
out=$(timeout 20 "$CTL" --config "$T/ctl.conf" 2>&1) && fail "a symlinked agents file was accepted"
echo "$out" | grep -qF "cannot read '$T/agents.link': a symbolic link" || fail "symlink message: $out"
sed -i "s|^agents_file = .*|agents_file = $T/d/agents|" "$T/ctl.conf"

# The token files: nobody else may read them either (exit 2, as every file
# the configuration names).
WANT=2
for f in ctok atok; do
  chmod 640 "$T/$f"
  refused "$T/$f" "mode 0640 lets other users read it; use chmod 600"
  chmod 602 "$T/$f"
  refused "$T/$f" "mode 0602 lets other users write it; use chmod 600"
  chown nobody "$T/$f"; chmod 600 "$T/$f"
  refused "$T/$f" "owned by uid $NOBODY, not by root; use chown root"
  chown 0 "$T/$f"
done
ln -s "$T/ctok" "$T/ctok.link"
sed -i "s|^token_file = .*|token_file = $T/ctok.link|" "$T/ctl.conf"
out=$(timeout 20 "$CTL" --config "$T/ctl.conf" 2>&1) && fail "a symlinked token file was accepted"
echo "$out" | grep -qF "cannot open token file '$T/ctok.link': a symbolic link" || fail "token symlink message: $out"
sed -i "s|^token_file = .*|token_file = $T/ctok|" "$T/ctl.conf"

# The same rules for a file given on the command line.
chmod 666 "$T/schedule.json"
out=$(timeout 20 "$CTL" --config "$T/ctl.conf" --schedule-file "$T/schedule.json" 2>&1) && rc=0 || rc=$?
[ "$rc" = 2 ] || fail "--schedule-file 0666: exit $rc: $out"
echo "$out" | grep -qF "'$T/schedule.json': mode 0666 lets other users write it; use chmod go-w" || fail "--schedule-file: $out"
chmod 644 "$T/schedule.json"
accepted "all restored"

# report --plot of an unsupported format names the supported ones, before
# any store is opened; so does the usage line.
out=$("$CTL" report 1 --state-db "$T/ctl.db" --plot "$T/x.gif" 2>&1) && rc=0 || rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -qF "error: report: --plot '$T/x.gif': the format follows the extension: .svg, .png or .pdf" ||
  fail "report --plot x.gif: exit $rc: $out"
"$CTL" --help | grep -qF "[--plot FILE.svg|.png|.pdf]" || fail "usage: no plot formats"
echo "ok: controller_trust"
