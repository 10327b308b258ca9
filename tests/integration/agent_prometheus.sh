#!/usr/bin/env bash
# A real Prometheus server (Debian's package, installed by install-deps.sh
# when missing) scrapes pflexd on loopback; a value read back through
# Prometheus's HTTP API (/api/v1/query) equals what the fake NVML says.
source "$(dirname "$0")/agent_common.bash"
command -v prometheus >/dev/null || bash "$PFLEX_SOURCE_DIR/scripts/install-deps.sh"
command -v prometheus >/dev/null || fail "prometheus missing after install-deps"

fake_state 2
start_pflexd
api PUT /v1/caps '{"caps":[{"gpu":1,"watts":432}],"lease_s":120}'
expect_code 200 "cap"

PROM_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$T/prometheus.yml" <<EOC
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: pflexd
    static_configs:
      - targets: ["127.0.0.1:$PORT"]
EOC
promtool check config "$T/prometheus.yml" > /dev/null || fail "prometheus config"
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" > "$T/prometheus.log" 2>&1 &
AGENT_PIDS+=($!)
PROM="http://127.0.0.1:$PROM_PORT"

query() { curl -s --max-time 5 --get --data-urlencode "query=$1" "$PROM/api/v1/query"; }
got=""
for ((i = 0; i < 120; i++)); do # at most about 30 s
  reply=$(query 'pflex_gpu_power_limit_watts{gpu="1"}' || true)
  got=$(echo "$reply" | jq -r '.data.result[0].value[1] // empty' 2>/dev/null || true)
  [ -n "$got" ] && break
  sleep 0.25
done
[ -n "$got" ] || { tail -n 20 "$T/prometheus.log" >&2; fail "Prometheus never had pflexd's series: $reply"; }
expect_eq "$got" 432 "the limit read back through Prometheus"
up=$(query 'up{job="pflexd"}' | jq -r '.data.result[0].value[1]')
expect_eq "$up" 1 "the scrape target is up"
energy=$(query 'pflex_gpu_energy_joules_total{gpu="0"}' | jq -r '.data.result[0].value[1]')
expect_eq "$energy" 123456.789 "the energy counter through Prometheus"
stop_pflexd TERM
echo "agent_prometheus: ok"
