#!/usr/bin/env bash
# The shipped systemd unit passes `systemd-analyze verify` (with ExecStart at
# the built program) and is Type=notify with Restart=on-failure; the shipped
# example config is accepted by pflexd as it is, and pflexd started with it
# (paths moved into the test directory) serves.
source "$(dirname "$0")/agent_common.bash"

unit="$T/pflexd.service"
sed "s|@PFLEXD_PATH@|$PFLEXD|" "$PFLEX_SOURCE_DIR/dist/pflexd.service.in" > "$unit"
grep -q '^Type=notify$' "$unit" || fail "unit is not Type=notify"
grep -q '^Restart=on-failure$' "$unit" || fail "unit lacks Restart=on-failure"
if command -v systemd-analyze >/dev/null; then
  systemd-analyze verify "$unit" > "$T/verify" 2>&1 || fail "systemd-analyze verify: $(cat "$T/verify")"
  ! grep -v 'Failed to connect to bus' "$T/verify" | grep -q . || fail "systemd-analyze: $(cat "$T/verify")"
fi

fake_state 1
cp "$PFLEX_SOURCE_DIR/dist/pflexd.conf" "$T/pflexd.conf"
chmod 644 "$T/pflexd.conf"
"$PFLEXD" --config "$T/pflexd.conf" --help > /dev/null || fail "the example config is refused"
start_pflexd --config "$T/pflexd.conf"
api_noauth GET /v1/health
expect_code 200 "pflexd with the example config"
stop_pflexd TERM
echo "agent_unit: ok"
