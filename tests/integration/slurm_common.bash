# Shared helpers of the slurm_plugin*.sh integration tests (sourced; the
# .bash suffix keeps it out of the test glob). Builds on agent_common.bash
# (a temp dir $T, the fake NVML with 4 GPUs, start_pflexd/stop_pflexd,
# api_unix, fail) and adds the real Slurm test bed of scripts/slurm-testbed.sh
# with pflex_spank.so in its plugstack.conf, talking to that pflexd's Unix
# socket. Every wait is bounded; the EXIT trap stops the test bed and pflexd.
source "$(dirname "${BASH_SOURCE[0]}")/agent_common.bash"

: "${PFLEX_SOURCE_DIR:?}"
TESTBED=$PFLEX_SOURCE_DIR/scripts/slurm-testbed.sh
SPANK_SO=$PFLEX_BINARY_DIR/pflex_spank.so
[ -f "$SPANK_SO" ] || fail "missing $SPANK_SO (libslurm-dev not installed when configured?)"
BED=$T/slurm
ORIG_MW=700000

slurm_cleanup() {
  bash "$TESTBED" stop --dir "$BED" || true
  agent_cleanup
}
trap slurm_cleanup EXIT

fake_state 4

# start_bed [plugstack arguments...]: the test bed with the plugin.
start_bed() {
  mkdir -p "$BED"
  echo "required $SPANK_SO socket=$SOCK $*" > "$T/plugstack.conf"
  bash "$TESTBED" start --dir "$BED" --plugstack "$T/plugstack.conf"
  eval "$(bash "$TESTBED" env --dir "$BED")"
}

# submit_held ARGS...: a job that runs until release JOBID (at most 120 s),
# writing its CUDA_VISIBLE_DEVICES and PFLEX_* variables first; prints its id.
submit_held() {
  cat > "$T/held.sh" <<EOF
#!/bin/sh
env | grep -E '^(CUDA_VISIBLE_DEVICES|PFLEX_)' | sort
i=0
while [ ! -e "$T/release.\$SLURM_JOB_ID" ] && [ \$i -lt 600 ]; do sleep 0.2; i=\$((i + 1)); done
EOF
  (cd "$T" && sbatch --parsable -o "$T/job-%j.out" "$@" "$T/held.sh")
}
release() { touch "$T/release.$1"; }

job_state() { squeue -h -j "$1" --states=all -o %T 2>/dev/null; }

# wait_state JOB STATE SECONDS
wait_state() {
  local i
  for ((i = 0; i < $3 * 5; i++)); do
    [ "$(job_state "$1")" = "$2" ] && return 0
    sleep 0.2
  done
  fail "job $1: not $2 within $3 s (it is '$(job_state "$1")'); slurmd log: $(tail -n 20 "$BED/log/slurmd.log")"
}

# wait_ended JOB SECONDS: the job left COMPLETING (its epilog has finished).
wait_ended() {
  local i st
  for ((i = 0; i < $2 * 5; i++)); do
    st=$(job_state "$1")
    case $st in COMPLETED | CANCELLED | FAILED | TIMEOUT | NODE_FAIL) return 0 ;; esac
    sleep 0.2
  done
  fail "job $1: still '$st' after $2 s"
}

# pflexd_job_gpus JOB: the job's GPUs as pflexd lists them ("0,1"), or "".
pflexd_job_gpus() {
  api_unix GET /v1/jobs
  expect_code 200 "GET /v1/jobs"
  echo "$BODY" | jq -r --arg id "$1" '.jobs[] | select(.id == $id) | .gpus | map(tostring) | join(",")'
}

# wait_registered JOB SECONDS: prints the GPUs pflexd holds for the job.
wait_registered() {
  local i g
  for ((i = 0; i < $2 * 5; i++)); do
    g=$(pflexd_job_gpus "$1")
    [ -n "$g" ] && { echo "$g"; return 0; }
    sleep 0.2
  done
  fail "job $1: pflexd never heard of it within $2 s; slurmd log: $(grep pflex "$BED/log/slurmd.log" | tail -n 5)"
}

# job_cvd JOB: the CUDA_VISIBLE_DEVICES the job printed (waits at most 10 s).
job_cvd() {
  local i
  for ((i = 0; i < 50; i++)); do
    grep -q '^CUDA_VISIBLE_DEVICES=' "$T/job-$1.out" 2>/dev/null && break
    sleep 0.2
  done
  sed -n 's/^CUDA_VISIBLE_DEVICES=//p' "$T/job-$1.out"
}

# cap_gpus "0,1" WATTS LEASE_S: caps those GPUs through pflexd, as the
# controller does during an event, and checks the fake NVML took it.
cap_gpus() {
  local caps g
  caps=$(echo "$1" | tr ',' '\n' | jq -R --argjson w "$2" '{gpu: tonumber, watts: $w}' | jq -s -c .)
  api_unix PUT /v1/caps "{\"caps\":$caps,\"lease_s\":$3,\"fallback\":\"default\"}"
  expect_code 200 "PUT /v1/caps $caps"
  for g in ${1//,/ }; do
    expect_eq "$(limit "$g")" "$(($2 * 1000))" "GPU $g limit after the cap"
  done
}

# all_original WHAT [SECONDS]: every GPU at its original limit (waits at most
# SECONDS, default 5).
all_original() {
  local i g bad
  for ((i = 0; i < ${2:-5} * 5; i++)); do
    bad=""
    for g in 0 1 2 3; do
      [ "$(limit "$g")" = "$ORIG_MW" ] || bad+=" gpu$g=$(limit "$g")"
    done
    [ -z "$bad" ] && return 0
    sleep 0.2
  done
  fail "$1: GPUs not at their original $ORIG_MW mW:$bad"
}

slurmd_log_has() { grep -qF "$1" "$BED/log/slurmd.log"; }

# --- pflex-controller on the test bed (slurm_event.sh, slurm_discovery.sh)

# start_controller OPTIONS...: pflex-controller with the classes rigid
# (floor 99%) and flex50 (floor 50%), half-second rounds, its API on a free
# loopback port, and OPTIONS (where its agents come from); waits (at most
# 10 s) until it serves. Sets C, AUTH, CTL_PID; its log is $T/ctl.log.
start_controller() {
  local cport i
  CTL="$PFLEX_BINARY_DIR/pflex-controller"
  [ -x "$CTL" ] || fail "missing $CTL"
  echo "controller-token-slurm-$RANDOM-1" > "$T/ctok"
  chmod 600 "$T/ctok"
  cport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$CTL" "$@" --agent-token-file "$T/token" --token-file "$T/ctok" \
    --state-db "$T/ctl.db" --listen "127.0.0.1:$cport" --round-s 0.5 --lease-rounds 4 \
    --agent-timeout-s 0.4 --class rigid,floor_pct=99 --class flex50,floor_pct=50 > "$T/ctl.log" 2>&1 &
  CTL_PID=$!
  AGENT_PIDS+=("$CTL_PID")
  C="http://127.0.0.1:$cport"
  AUTH="Authorization: Bearer $(cat "$T/ctok")"
  for ((i = 0; i < 100; i++)); do curl -sf "$C/v1/health" > /dev/null && return 0; sleep 0.1; done
  fail "the controller did not start: $(cat "$T/ctl.log")"
}

# submit_rigid_flex: a rigid job on one GPU and a flex50 job on two, both
# running and registered with pflexd. Sets rigid, flex, g_rigid, g_flex.
submit_rigid_flex() {
  rigid=$(submit_held --gres=gpu:1 --pflex-class=rigid)
  flex=$(submit_held --gres=gpu:2 --pflex-class=flex50)
  wait_state "$rigid" RUNNING 30
  wait_state "$flex" RUNNING 30
  g_rigid=$(wait_registered "$rigid" 10)
  g_flex=$(wait_registered "$flex" 10)
  echo "rigid job $rigid: GPU $g_rigid; flex50 job $flex: GPUs $g_flex"
  [[ $g_flex =~ ^[0-3],[0-3]$ ]] || fail "flex job has GPUs '$g_flex', want two"
}

# gpu_limit_w GPU: pflexd's limit of it, in W.
gpu_limit_w() {
  api_unix GET /v1/gpus
  echo "$BODY" | jq --argjson g "$1" '.gpus[] | select(.index == $g) | .limit_w'
}
# max_limit "0,1": the highest limit among those GPUs, in W.
max_limit() { local g m=0 l; for g in ${1//,/ }; do l=$(gpu_limit_w "$g"); m=$(jq -n "[$m, $l] | max"); done; echo "$m"; }
# flex_capped_more: the flex50 job's GPUs capped below the rigid job's and
# below 700 W, and the controller compliant.
flex_capped_more() {
  local r f
  r=$(max_limit "$g_rigid") f=$(max_limit "$g_flex")
  jq -ne "$f < $r and $f < 700" > /dev/null &&
    curl -sf "$C/v1/status" | jq -e '.compliant == true' > /dev/null
}
# wait_flex_capped_more SECONDS
wait_flex_capped_more() {
  local i
  for ((i = 0; i < $1 * 10; i++)); do flex_capped_more && return 0; sleep 0.1; done
  fail "the event did not cap the flex job more than the rigid one within $1 s: rigid $(max_limit "$g_rigid") W, flex $(max_limit "$g_flex") W; $(curl -s "$C/v1/status")"
}
# check_floors: prints the caps in force; each job within its floor (the
# throughput the controller predicts at its cap, relative to the job's
# uncapped throughput, its curve's T_max).
check_floors() {
  local st j
  st=$(curl -sf "$C/v1/status")
  echo "during the event: rigid at $(max_limit "$g_rigid") W, flex50 at $(max_limit "$g_flex") W; target $(jq .target_w <<< "$st") W, measured $(jq .measured_w <<< "$st") W"
  for j in "$rigid" "$flex"; do
    jq -e --arg j "$j" '.jobs[] | select(.id == $j) |
      (.predicted_throughput / (.throughput_uncapped // 1)) >= .floor - 1e-3' <<< "$st" > /dev/null ||
      fail "job $j below its floor: $(jq -c --arg j "$j" '.jobs[] | select(.id == $j)' <<< "$st")"
  done
}
