#!/usr/bin/env bash
# GET /v1/jobs, PUT and DELETE /v1/jobs/{id}: registration, bad ids and
# bodies (4xx naming the field, nothing changed), a GPU claimed twice (409),
# DELETE restoring the job's GPUs only; the dcgm-exporter mapping directory
# (watched: a new file shows within a bounded wait; untrusted files ignored);
# per-job throughput from StatsD on loopback and from a scraped Prometheus
# endpoint of the training process (a gauge, and a counter's rate).
source "$(dirname "$0")/agent_common.bash"

fake_state 4
MAP="$T/map"
start_pflexd --mapping-dir "$MAP"
[ -d "$MAP" ] || fail "the mapping directory was not created"
STATSD=$(sed -n 's/^note: StatsD intake on udp:127\.0\.0\.1:\([0-9]*\)$/\1/p' "$LOG")
[ -n "$STATSD" ] || fail "no StatsD port in: $(cat "$LOG")"

api_noauth PUT /v1/jobs/a1 '{"gpus":[0,1]}'
expect_error 401 "" "PUT /v1/jobs without a token"
api PUT /v1/jobs/a1 '{"gpus":[0,1]}'
expect_code 200 "PUT /v1/jobs/a1"
expect_eq "$(echo "$BODY" | jq -c '[.id, .gpus, .source]')" '["a1",[0,1],"api"]' "the reply"

bad() { # STATUS FIELD PATH BODY
  api PUT "$3" "$4"
  expect_error "$1" "$2" "PUT $3 $4"
}
bad 400 "id" /v1/jobs/ '{"gpus":[2]}'
bad 400 "id" /v1/jobs/a.b '{"gpus":[2]}'
bad 400 "id" /v1/jobs/a1/x '{"gpus":[2]}'
bad 400 "id" "/v1/jobs/$(printf 'x%.0s' {1..65})" '{"gpus":[2]}'
bad 400 "" /v1/jobs/b2 '{"gpus":[2]'
bad 400 "gpus" /v1/jobs/b2 '{}'
bad 400 "gpus" /v1/jobs/b2 '{"gpus":"2"}'
bad 422 "gpus" /v1/jobs/b2 '{"gpus":[]}'
bad 422 "gpus[1]" /v1/jobs/b2 '{"gpus":[2,2]}'
bad 422 "gpus[0]" /v1/jobs/b2 '{"gpus":[9]}'
bad 400 "gpus[0]" /v1/jobs/b2 '{"gpus":[true]}'
bad 400 "name" /v1/jobs/b2 '{"gpus":[2],"name":"x"}'
bad 409 "gpus" /v1/jobs/b2 '{"gpus":[1,2]}'
api GET /v1/jobs
expect_eq "$(echo "$BODY" | jq -c '[.jobs[] | [.id, .gpus]]')" '[["a1",[0,1]]]' "jobs after the refused requests"
expect_eq "$(echo "$BODY" | jq -c '.jobs[0] | [.class, .weight, .min_throughput]')" '[null,null,null]' "no metadata given"

# The job's metadata (the SPANK plugin's options): returned as given; a bad
# value is refused naming the field, and the job keeps what it had.
api PUT /v1/jobs/a1 '{"gpus":[0,1],"class":"flex25","weight":2.5,"min_throughput":0.6}'
expect_code 200 "PUT /v1/jobs/a1 with metadata"
expect_eq "$(echo "$BODY" | jq -c '[.class, .weight, .min_throughput]')" '["flex25",2.5,0.6]' "the reply's metadata"
bad 400 "class" /v1/jobs/a1 '{"gpus":[0],"class":"flex 25"}'
bad 400 "class" /v1/jobs/a1 "{\"gpus\":[0],\"class\":\"$(printf 'c%.0s' {1..33})\"}"
bad 400 "class" /v1/jobs/a1 '{"gpus":[0],"class":25}'
bad 422 "weight" /v1/jobs/a1 '{"gpus":[0],"weight":0}'
bad 422 "weight" /v1/jobs/a1 '{"gpus":[0],"weight":1001}'
bad 400 "weight" /v1/jobs/a1 '{"gpus":[0],"weight":"2"}'
bad 422 "min_throughput" /v1/jobs/a1 '{"gpus":[0],"min_throughput":1.5}'
bad 422 "min_throughput" /v1/jobs/a1 '{"gpus":[0],"min_throughput":-0.1}'
bad 400 "min_throughput" /v1/jobs/a1 '{"gpus":[0],"min_throughput":"0.5"}'
api GET /v1/jobs
expect_eq "$(echo "$BODY" | jq -c '.jobs[] | select(.id == "a1") | [.gpus, .class, .weight, .min_throughput]')" \
  '[[0,1],"flex25",2.5,0.6]' "a1 after the refused metadata"
# Registering again without them replaces them too.
api PUT /v1/jobs/a1 '{"gpus":[0,1],"class":"rigid"}'
expect_eq "$(echo "$BODY" | jq -c '[.class, .weight, .min_throughput]')" '["rigid",null,null]' "metadata replaced"

# Re-registering replaces the GPU set; DELETE restores only the job's GPUs.
api PUT /v1/jobs/b2 '{"gpus":[2,3]}'
expect_code 200 "PUT /v1/jobs/b2"
api PUT /v1/caps '{"caps":[{"job":"a1","watts":400},{"job":"b2","watts":350}],"lease_s":60}'
expect_code 200 "caps on both jobs"
api DELETE /v1/jobs/a1
expect_code 200 "DELETE /v1/jobs/a1"
expect_eq "$(echo "$BODY" | jq -c '[.restored[].gpu]')" '[0,1]' "restored GPUs of a1"
expect_eq "$(limit 0),$(limit 1),$(limit 2),$(limit 3)" 700000,700000,350000,350000 "limits after the job ended"
api DELETE /v1/jobs/a1
expect_error 404 "id" "DELETE of an unknown job"

# A job that ends under a lease with a wattage fallback (an event is on):
# its GPUs go to that fallback, the event-safe cap, not to their default; a
# lease already fallen back stays there. DELETE /v1/caps then restores them.
api PUT /v1/jobs/e5 '{"gpus":[0]}'
api PUT /v1/jobs/e6 '{"gpus":[1]}'
# (A request renews every held lease to its own: b2's too, which runs out
# to its default fallback here.)
api PUT /v1/caps '{"caps":[{"job":"e6","watts":320}],"lease_s":0.5,"fallback":{"watts":450}}'
expect_code 200 "caps on e6 with a short lease"
for ((i = 0; i < 50; i++)); do [ "$(limit 1)" = 450000 ] && break; sleep 0.1; done
expect_eq "$(limit 1)" 450000 "e6's GPU at its fallback after its lease ran out"
api PUT /v1/caps '{"caps":[{"job":"e5","watts":300}],"lease_s":60,"fallback":{"watts":500}}'
expect_code 200 "caps on e5 with a wattage fallback"
expect_eq "$(limit 0)" 300000 "e5's GPU capped"
api DELETE /v1/jobs/e5
expect_code 200 "DELETE /v1/jobs/e5"
expect_eq "$(echo "$BODY" | jq -c '[(.fallback[] | [.gpu, .limit_w]), .restored]')" '[[0,500],[]]' "e5's reply"
api DELETE /v1/jobs/e6
expect_code 200 "DELETE /v1/jobs/e6"
expect_eq "$(limit 0),$(limit 1),$(limit 2),$(limit 3)" 500000,450000,700000,700000 "limits after the jobs ended in an event"
api_noauth GET /v1/gpus
expect_eq "$(echo "$BODY" | jq -c '[.gpus[0,1] | [.job, .lease_state]]')" '[[null,"fallback"],[null,"fallback"]]' "their lease state"
# Without a wattage fallback the GPUs go back to their default (a1 above);
# the controller's DELETE /v1/caps at the event's end restores these.
api DELETE /v1/caps
expect_code 200 "DELETE /v1/caps"
expect_eq "$(limit 0),$(limit 1),$(limit 2),$(limit 3)" 700000,700000,700000,700000 "limits after DELETE /v1/caps"
api PUT /v1/caps '{"caps":[{"job":"b2","watts":350}],"lease_s":60}'
expect_code 200 "b2 capped again"
api_noauth DELETE /v1/jobs/b2
expect_error 401 "" "DELETE without a token"

# The mapping directory: file per GPU index holding the job id.
wait_job() { # ID GPUS: waits at most 5 s until GET /v1/jobs shows the job with those GPUs
  local i
  for ((i = 0; i < 100; i++)); do
    api_noauth GET /v1/jobs
    [ "$(echo "$BODY" | jq -c --arg id "$1" '[.jobs[] | select(.id == $id) | .gpus][0]')" = "$2" ] && return 0
    sleep 0.05
  done
  fail "job $1 with GPUs $2 not seen: $BODY"
}
printf '9001\n' > "$MAP/0.tmp" && mv "$MAP/0.tmp" "$MAP/0"
printf '9001\n' > "$MAP/1"
wait_job 9001 '[0,1]'
api_noauth GET /v1/jobs
expect_eq "$(echo "$BODY" | jq -r '.jobs[] | select(.id == "9001") | .source')" mapping_dir "source"
api_noauth GET /v1/gpus
expect_eq "$(echo "$BODY" | jq -r '.gpus[1].job')" 9001 "GPU 1's job from the directory"
# An API registration wins over the directory for the same GPU.
printf '9002\n' > "$MAP/2"
sleep 0.3
api_noauth GET /v1/gpus
expect_eq "$(echo "$BODY" | jq -r '.gpus[2].job')" b2 "the API's job wins"
# A file another user could write is ignored (and said so).
printf '6666\n' > "$MAP/3" && chmod 666 "$MAP/3"
sleep 0.3
grep -q "job mapping '$MAP/3' ignored: mode 0666" "$LOG" || fail "untrusted file not refused: $(cat "$LOG")"
rm "$MAP/0" "$MAP/1"
wait_job 9001 null

# StatsD: "JOB.tokens" counters become the job's throughput.
exec 3<>/dev/udp/127.0.0.1/"$STATSD"
for ((i = 0; i < 12; i++)); do
  printf 'b2.tokens:4000|c\n' >&3
  printf 'nosuchjob.tokens:4000|c\n' >&3
  sleep 0.2
done
exec 3>&-
for ((i = 0; i < 50; i++)); do
  api_noauth GET /v1/jobs
  [ "$(echo "$BODY" | jq '.jobs[] | select(.id == "b2") | .throughput_samples')" -gt 0 ] && break
  sleep 0.1
done
tput=$(echo "$BODY" | jq '.jobs[] | select(.id == "b2") | .throughput')
# 4000 tokens every 0.2 s: 20,000 tokens/s (the shell's sleeps make it a little less).
awk -v t="$tput" 'BEGIN { exit !(t > 10000 && t < 25000) }' || fail "throughput of b2: $tput ($BODY)"
curl -s "$URL/metrics" > "$T/m"
grep -q '^pflex_job_throughput{job="b2"} ' "$T/m" || fail "no job throughput metric"
[ "$(awk '$1 == "pflex_statsd_unattributed_total" { print $2 }' "$T/m")" -ge 12 ] || fail "unattributed metrics not counted"
# A Prometheus endpoint of the training process, scraped once a second: a
# gauge summed over its series, then a counter turned into a rate.
bad 422 "metrics_url" /v1/jobs/b2 '{"gpus":[2,3],"metrics_url":"http://10.0.0.1:9000/metrics"}'
bad 422 "metrics_url" /v1/jobs/b2 '{"gpus":[2,3],"metrics_url":"file:///etc/shadow"}'
bad 400 "metric" /v1/jobs/b2 '{"gpus":[2,3],"metric":"tps"}'
bad 400 "metric" /v1/jobs/b2 '{"gpus":[2,3],"metrics_url":"http://127.0.0.1:1/metrics","metric":"9x"}'
mkdir -p "$T/www"
printf '# TYPE tokens_per_second gauge\ntokens_per_second{rank="0"} 1000\ntokens_per_second{rank="1",note="a}b"} 2500\nother 7\n' > "$T/www/metrics"
WWW_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$T/www" "$WWW_PORT" > "$T/www.log" 2>&1 &
AGENT_PIDS+=($!)
for ((i = 0; i < 100; i++)); do curl -sf -o /dev/null "http://127.0.0.1:$WWW_PORT/metrics" && break; sleep 0.05; done
api PUT /v1/jobs/s3 "{\"gpus\":[0],\"metrics_url\":\"http://127.0.0.1:$WWW_PORT/metrics\"}"
expect_code 200 "a job with a metrics endpoint"
wait_tput() { # JOB VALUE: at most 5 s
  for ((i = 0; i < 100; i++)); do
    api_noauth GET /v1/jobs
    [ "$(echo "$BODY" | jq --arg j "$1" '.jobs[] | select(.id == $j) | .throughput')" = "$2" ] && return 0
    sleep 0.05
  done
  fail "throughput of $1 is not $2: $BODY"
}
wait_tput s3 3500
printf 'train_tokens_total 1000\n' > "$T/www/metrics"
api PUT /v1/jobs/s3 "{\"gpus\":[0],\"metrics_url\":\"http://127.0.0.1:$WWW_PORT/metrics\",\"metric\":\"train_tokens_total\"}"
expect_code 200 "the counter instead"
sleep 1.2
printf 'train_tokens_total 9000\n' > "$T/www/metrics" # +8000 tokens over about a second
for ((i = 0; i < 60; i++)); do
  api_noauth GET /v1/jobs
  rate=$(echo "$BODY" | jq '.jobs[] | select(.id == "s3") | .throughput')
  awk -v r="$rate" 'BEGIN { exit !(r > 3000 && r < 9000) }' && break
  sleep 0.05
done
awk -v r="$rate" 'BEGIN { exit !(r > 3000 && r < 9000) }' || fail "counter rate of s3: $rate ($BODY)"
expect_eq "$(echo "$BODY" | jq '.jobs[] | select(.id == "s3") | .scrape_failures')" 0 "scrape failures"

# Telemetry for a controller's PFI model: s3's features while it trains
# uncapped (the fake's readings of GPU 0), frozen while it is capped.
tel() { api_noauth GET /v1/jobs; echo "$BODY" | jq -c ".jobs[] | select(.id == \"s3\") | $1"; }
for ((i = 0; i < 100; i++)); do [ "$(tel '.telemetry != null')" = true ] && break; sleep 0.05; done
expect_eq "$(tel '.telemetry | [.gpu_util, .mem_copy_util, .sm_clock]')" \
  "$("$PFLEX" gpus --json | jq -c '.[0] | [.gpu_util, .mem_util, .sm_clock_mhz]')" "s3's telemetry"
[ "$(tel .telemetry_samples)" -ge 10 ] || fail "s3's telemetry from $(tel .telemetry_samples) samples"
api PUT /v1/caps '{"caps":[{"job":"s3","watts":400}],"lease_s":60}'
expect_code 200 "s3 capped"
sleep 0.3 # a sample or two of the old limit may still come in
n1=$(tel .telemetry_samples)
sleep 0.5 # five samples at 10 Hz
expect_eq "$(tel .telemetry_samples)" "$n1" "s3's telemetry samples while capped"
expect_eq "$(tel '.telemetry != null')" true "s3's uncapped telemetry kept while capped"

stop_pflexd TERM
expect_eq "$(limit 2),$(limit 3)" 700000,700000 "b2's GPUs restored at SIGTERM"
echo "agent_jobs: ok"
