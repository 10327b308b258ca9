#!/usr/bin/env bash
# GET /v1/gpus: every field the issue names, with the fake NVML's values, the
# enforced limit when an out-of-band limit is lower, the job and the lease;
# sampling follows changes within a few sample periods; a GPU that fails to
# read is counted as dropped samples and pflexd keeps serving; the sim backend.
source "$(dirname "$0")/agent_common.bash"

fake_state 3
fake_set gpu2.enforced_mw 400000
start_pflexd --hz 20
api_noauth GET /v1/gpus
expect_code 200 "GET /v1/gpus"
fields='["default_limit_w","energy_j","enforced_limit_w","index","job","lease_s_left","limit_w","max_limit_w","min_limit_w","power_w","uuid"]'
expect_eq "$(echo "$BODY" | jq -c '.gpus[0] | keys - ["lease_state"]')" "$fields" "fields of a GPU"
expect_eq "$(echo "$BODY" | jq '.gpus | length')" 3 "GPU count"
expect_eq "$(echo "$BODY" | jq -c '.gpus[1] | [.index, .uuid, .power_w, .limit_w, .default_limit_w, .min_limit_w, .max_limit_w, .energy_j, .job, .lease_s_left]')" \
  '[1,"GPU-fake-0000-0000-0000-000000000001",650,700,700,200,700,123456.789,null,null]' "GPU 1"
expect_eq "$(echo "$BODY" | jq '.gpus[2].enforced_limit_w')" 400 "enforced limit below the limit"

# A cap shows in limit_w, power_w (the fake draws min(power, limit)) and the lease.
api PUT /v1/caps '{"caps":[{"gpu":0,"watts":300}],"lease_s":40}'
expect_code 200 "cap"
api PUT /v1/jobs/77 '{"gpus":[0]}'
# Readings are the last sample (10 Hz): wait, at most 3 s, for one taken
# after the cap, as a client would see on its next read.
for _ in $(seq 30); do
  api_noauth GET /v1/gpus
  [ "$(echo "$BODY" | jq '.gpus[0].power_w')" = 300 ] && break
  sleep 0.1
done
expect_eq "$(echo "$BODY" | jq -c '.gpus[0] | [.limit_w, .power_w, .job]')" '[300,300,"77"]' "GPU 0 capped, with its job"
echo "$BODY" | jq -e '.gpus[0].lease_s_left > 35 and .gpus[0].lease_s_left <= 40' >/dev/null || fail "lease_s_left: $BODY"

# Readings follow the GPU (here: the energy counter) within a few samples.
fake_set gpu1.energy_mj 223456789
for ((i = 0; i < 100; i++)); do
  api_noauth GET /v1/gpus
  [ "$(echo "$BODY" | jq '.gpus[1].energy_j')" = 223456.789 ] && break
  sleep 0.02
done
expect_eq "$(echo "$BODY" | jq '.gpus[1].energy_j')" 223456.789 "energy after it changed"

# A GPU that cannot be read: dropped samples, the rest keeps working.
fake_set gpu1.fail.power gpu_lost
sleep 0.3
curl -s "$URL/metrics" > "$T/m"
dropped=$(awk '$1 == "pflex_samples_dropped_total" { print $2 }' "$T/m")
[ "${dropped:-0}" -gt 0 ] || fail "no dropped samples counted for a failing GPU"
grep -q '^pflex_gpu_up{gpu="1",uuid="GPU-fake-0000-0000-0000-000000000001"} 0$' "$T/m" || fail "GPU 1 not down: $(grep pflex_gpu_up "$T/m")"
api_noauth GET /v1/gpus
expect_code 200 "GET /v1/gpus with a GPU failing"
fake_set gpu1.fail.power none
stop_pflexd TERM
expect_eq "$(limit 0)" 700000 "GPU 0 restored at SIGTERM"

# nvml_profiling: NVML's GPM activities (the fake's GPU 0 has them, GPU 1
# not) join a job's telemetry: DCGM's fractions from GPM's percents.
fake_set gpu0.gpm_sm 88.5
fake_set gpu0.gpm_tensor 41
fake_set gpu0.gpm_dram 55
start_pflexd --nvml-profiling true
api PUT /v1/jobs/p0 '{"gpus":[0]}'
api PUT /v1/jobs/p1 '{"gpus":[1]}'
tel() { api_noauth GET /v1/jobs; echo "$BODY" | jq -c ".jobs[] | select(.id == \"$1\") | .telemetry | $2"; }
for ((i = 0; i < 100; i++)); do [ "$(tel p0 .dram_active)" != null ] && [ "$(tel p1 .gpu_util)" != null ] && break; sleep 0.05; done
expect_eq "$(tel p0 '[.sm_active, .pipe_tensor_active, .dram_active]')" '[0.885,0.41,0.55]' "p0's GPM telemetry"
expect_eq "$(tel p1 '[.gpu_util != null, .dram_active]')" '[true,null]' "p1's telemetry without GPM"
stop_pflexd TERM
# Off (the default): no GPM activities.
start_pflexd
api PUT /v1/jobs/p0 '{"gpus":[0]}'
for ((i = 0; i < 100; i++)); do [ "$(tel p0 .gpu_util)" != null ] && break; sleep 0.05; done
expect_eq "$(tel p0 '[.gpu_util != null, .dram_active]')" '[true,null]' "p0's telemetry with nvml_profiling off"
stop_pflexd TERM

# The sim backend: simulated GPUs of the twin.
BACKEND=sim start_pflexd --sim-job gpus=8,clock=real
api_noauth GET /v1/gpus
expect_eq "$(echo "$BODY" | jq '.gpus | length')" 8 "sim GPUs"
echo "$BODY" | jq -e '.gpus | all(.power_w > 0 and .limit_w > 0 and .max_limit_w >= .limit_w)' >/dev/null || fail "sim readings: $BODY"
api_noauth GET /v1/health
expect_eq "$(echo "$BODY" | jq -r .backend)" sim "backend"
stop_pflexd TERM
# Without --sim-job: the sim's default job, on the real clock (a daemon's).
BACKEND=sim start_pflexd
api_noauth GET /v1/gpus
echo "$BODY" | jq -e '.gpus | length > 0 and all(.power_w > 0)' >/dev/null || fail "default sim: $BODY"
e0=$(echo "$BODY" | jq '.gpus[0].energy_j')
sleep 0.5
api_noauth GET /v1/gpus
awk -v a="$e0" -v b="$(echo "$BODY" | jq '.gpus[0].energy_j')" 'BEGIN { exit !(b > a) }' ||
  fail "the sim's energy does not advance in real time: $e0 then $(echo "$BODY" | jq '.gpus[0].energy_j')"
stop_pflexd TERM
echo "agent_gpus: ok"
