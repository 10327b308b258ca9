# pflex-controller against an agent older than GET /v1/node (a stand-in on
# loopback that answers GET /v1/gpus and GET /v1/jobs, and 404 to /v1/node
# as such a pflexd does): the controller notes it once, reads that agent by
# the two requests from the next round on, and sees its GPUs and its job.
# The stand-in stops by itself after 60 s.
source "$(dirname "$0")/controller_common.bash"

echo "agent-token-for-tests-0001" > "$T/atok"; chmod 600 "$T/atok"
echo "controller-token-for-tests-1" > "$T/ctok"; chmod 600 "$T/ctok"
APORT=$(free_port)
python3 - "$APORT" > "$T/agent.log" 2>&1 <<'PY' &
import http.server, json, sys, time
gpus = {"gpus": [{"index": i, "uuid": "GPU-%d" % i, "power_w": 400.5, "limit_w": 700,
                  "enforced_limit_w": 700, "default_limit_w": 700, "min_limit_w": 200,
                  "max_limit_w": 700, "energy_j": 1.0, "job": "old1", "lease_s_left": None,
                  "lease_state": "none"} for i in range(2)]}
jobs = {"jobs": [{"id": "old1", "gpus": [0, 1], "source": "api", "throughput": 100.0,
                  "throughput_time": time.time(), "throughput_samples": 1}]}
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def reply(self, code, obj):
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        print("GET", self.path, flush=True)
        if self.path == "/v1/gpus": return self.reply(200, gpus)
        if self.path == "/v1/jobs": return self.reply(200, jobs)
        self.reply(404, {"error": "no such path"})
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
s.timeout = 0.2
end = time.time() + 60
while time.time() < end:
    s.handle_request()
PY
PIDS+=($!)
echo "http://127.0.0.1:$APORT" > "$T/agents"
wait_until 10 curl -sf "127.0.0.1:$APORT/v1/gpus" || fail "the stand-in agent did not start"

CPORT=$(free_port)
"$CTL" --agents-file "$T/agents" --agent-token-file "$T/atok" --token-file "$T/ctok" --state-db "$T/ctl.db" \
  --listen "127.0.0.1:$CPORT" --round-s 0.5 --agent-timeout-s 0.4 >> "$T/ctl.log" 2>&1 &
PIDS+=($!)
C="http://127.0.0.1:$CPORT"
seen() { curl -sf "$C/v1/status" | jq -e '.round >= 4 and .measured_w > 800 and
  ([.jobs[] | select(.id == "old1")] | length) == 1' >/dev/null; }
wait_until 10 seen || fail "the old agent's GPUs and job not seen: $(curl -s "$C/v1/status"; cat "$T/ctl.log")"
[ "$(grep -c "has no GET /v1/node" "$T/ctl.log")" -eq 1 ] || fail "the fallback not noted once: $(cat "$T/ctl.log")"
[ "$(grep -c "GET /v1/node" "$T/agent.log")" -eq 1 ] || fail "GET /v1/node asked more than once"
grep -q "GET /v1/jobs" "$T/agent.log" || fail "the old agent was not read by GET /v1/jobs"
echo "controller_old_agent: ok"
