#!/usr/bin/env bash
# What pflexd refuses at start, by the same rule and wording as
# pflex-controller (src/agent/trust.c; controller_trust.sh): a config file or
# token file that is group-writable, other-writable (the token: readable),
# owned by another user, a symbolic link, or in a directory others can write
# without the sticky bit; and a state directory others can write. Each refusal
# names the file, the owner or mode, and the fix; a sticky directory is fine.
source "$(dirname "$0")/agent_common.bash"

fake_state 1
NOBODY=$(id -u nobody)
printf 'hz = 5\n' > "$T/good.conf" && chmod 644 "$T/good.conf"

# refused RC WHAT: pflexd exits RC at once and its output holds WHAT (fixed text).
refused() {
  local want=$1 what=$2 rc=0
  shift 2
  timeout 20 "$PFLEXD" --backend nvml --listen 127.0.0.1:0 --state-dir "$STATE" \
    --socket "$T/run/r.sock" --statsd "" "$@" > "$T/refused.log" 2>&1 || rc=$?
  expect_eq "$rc" "$want" "exit status for $*"
  grep -qF "$what" "$T/refused.log" || fail "for $*: expected '$what' in: $(cat "$T/refused.log")"
}
conf() { refused 2 "$2" --token-file "$T/token" --config "$1"; }
token() { refused 1 "$2" --token-file "$1"; }

# The config file.
cp "$T/good.conf" "$T/g.conf" && chmod 664 "$T/g.conf"
conf "$T/g.conf" "refusing config file '$T/g.conf': mode 0664 lets other users write it; use chmod go-w"
cp "$T/good.conf" "$T/o.conf" && chmod 646 "$T/o.conf"
conf "$T/o.conf" "refusing config file '$T/o.conf': mode 0646 lets other users write it; use chmod go-w"
cp "$T/good.conf" "$T/n.conf" && chown nobody "$T/n.conf"
conf "$T/n.conf" "refusing config file '$T/n.conf': owned by uid $NOBODY, not by root; use chown root"
ln -s "$T/good.conf" "$T/l.conf"
conf "$T/l.conf" "cannot open '$T/l.conf': a symbolic link"
mkdir "$T/open" && chmod 777 "$T/open" && cp -p "$T/good.conf" "$T/open/c.conf"
conf "$T/open/c.conf" "refusing config file '$T/open/c.conf': its directory '$T/open': mode 0777 lets other users write it; use chmod go-w"
mkdir "$T/theirs" && chown nobody "$T/theirs" && cp -p "$T/good.conf" "$T/theirs/c.conf"
conf "$T/theirs/c.conf" "its directory '$T/theirs': owned by uid $NOBODY, not by root; use chown root"

# The token file.
cp -p "$T/token" "$T/tok.g" && chmod 620 "$T/tok.g"
token "$T/tok.g" "refusing token file '$T/tok.g': mode 0620 lets other users write it; use chmod 600"
cp -p "$T/token" "$T/tok.o" && chmod 604 "$T/tok.o"
token "$T/tok.o" "refusing token file '$T/tok.o': mode 0604 lets other users read it; use chmod 600"
cp -p "$T/token" "$T/tok.n" && chown nobody "$T/tok.n"
token "$T/tok.n" "refusing token file '$T/tok.n': owned by uid $NOBODY, not by root; use chown root"
ln -s "$T/token" "$T/tok.l"
token "$T/tok.l" "cannot open token file '$T/tok.l': a symbolic link"
cp -p "$T/token" "$T/open/token"
token "$T/open/token" "refusing token file '$T/open/token': its directory '$T/open': mode 0777 lets other users write it; use chmod go-w"

# A state directory others can write, sticky or not: its own files are at stake.
mkdir "$T/wide" && chmod 1777 "$T/wide"
refused 1 "state directory '$T/wide': mode 1777 lets other users write it; use chmod go-w" \
  --token-file "$T/token" --state-dir "$T/wide"

# A sticky directory holding the files (like /tmp) is fine: pflexd serves.
chmod 1777 "$T/open"
start_pflexd --config "$T/open/c.conf" --token-file "$T/open/token"
api_noauth GET /v1/health
expect_code 200 "pflexd with its config and token in a sticky 1777 directory"
stop_pflexd TERM
echo "ok: agent_trust"
