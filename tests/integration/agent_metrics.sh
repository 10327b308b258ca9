#!/usr/bin/env bash
# GET /metrics: Prometheus text that `promtool check metrics` accepts (no
# lint problem at all), with the values of the fake NVML: energy as a joule
# counter, power and limits in watts, the lease, API errors by status, the
# job label only when asked for (metrics_job_label).
source "$(dirname "$0")/agent_common.bash"
command -v promtool >/dev/null || bash "$PFLEX_SOURCE_DIR/scripts/install-deps.sh"
command -v promtool >/dev/null || fail "promtool missing after install-deps"

fake_state 2
start_pflexd
api PUT /v1/caps '{"caps":[{"gpu":1,"watts":450}],"lease_s":30}'
api PUT /v1/jobs/42 '{"gpus":[1]}'
api PUT /v1/caps '{"caps":[{"gpu":9,"watts":450}]}'
expect_code 422 "a bad request, to count"
value() { awk -v k="$1" '$1 == k { print $2 }' "$T/m"; }
g1='gpu="1",uuid="GPU-fake-0000-0000-0000-000000000001"'
# The metrics show the last sample (10 Hz): wait, at most 3 s, for one taken
# after the cap, as a scraper would see on its next scrape.
for _ in $(seq 30); do
  curl -s -D "$T/h" -o "$T/m" "$URL/metrics"
  [ "$(value "pflex_gpu_power_watts{$g1}")" = 450 ] && break
  sleep 0.1
done
grep -qi '^Content-Type: text/plain; version=0.0.4' "$T/h" || fail "content type: $(cat "$T/h")"
promtool check metrics < "$T/m" > "$T/lint" 2>&1 || fail "promtool check metrics: $(cat "$T/lint")"
[ ! -s "$T/lint" ] || fail "promtool lint: $(cat "$T/lint")"

expect_eq "$(value "pflex_gpu_energy_joules_total{$g1}")" 123456.789 "energy counter"
expect_eq "$(value "pflex_gpu_power_watts{$g1}")" 450 "power under the cap"
expect_eq "$(value "pflex_gpu_power_limit_watts{$g1}")" 450 "limit"
expect_eq "$(value "pflex_gpu_default_power_limit_watts{$g1}")" 700 "default limit"
expect_eq "$(value "pflex_gpu_min_power_limit_watts{$g1}")" 200 "min limit"
expect_eq "$(value "pflex_gpu_capped{$g1}")" 1 "capped"
expect_eq "$(value 'pflex_gpu_capped{gpu="0",uuid="GPU-fake-0000-0000-0000-000000000000"}')" 0 "GPU 0 not capped"
left=$(value "pflex_gpu_lease_seconds_left{$g1}")
awk -v l="$left" 'BEGIN { exit !(l > 25 && l <= 30) }' || fail "lease seconds left: $left"
expect_eq "$(value 'pflex_api_errors_total{code="422"}')" 1 "API errors by status"
grep -q '^# TYPE pflex_gpu_energy_joules_total counter$' "$T/m" || fail "energy is not a counter"
grep -q 'job="42"' "$T/m" && ! grep -q '^pflex_job_gpus{job="42"} 1$' "$T/m" && fail "job label without asking"
grep '^pflex_gpu' "$T/m" | grep -q 'job=' && fail "job label on GPU series without metrics_job_label"
stop_pflexd TERM

start_pflexd --metrics-job-label true
api PUT /v1/jobs/42 '{"gpus":[1]}'
curl -s -o "$T/m" "$URL/metrics"
promtool check metrics < "$T/m" > "$T/lint" 2>&1 || fail "promtool with job labels: $(cat "$T/lint")"
grep -q "^pflex_gpu_power_watts{$g1,job=\"42\"} 650$" "$T/m" || fail "job label asked for: $(grep power_watts "$T/m")"
stop_pflexd TERM
echo "agent_metrics: ok"
