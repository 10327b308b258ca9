#!/usr/bin/env bash
# pflex_spank.so when a job does not end by itself: a capped job killed with
# scancel, and a capped job whose slurmd is killed (-9) and restarted while it
# runs, both end with every GPU at its original limit, and the node goes back
# to idle (no failed epilog draining it). Real Slurm, real pflexd, fake NVML.
source "$(dirname "$0")/slurm_common.bash"

start_pflexd
start_bed

# -- scancel mid-job, with the job's GPUs capped under a long lease.
job=$(submit_held --gres=gpu:3 --pflex-class=flex25)
wait_state "$job" RUNNING 30
g=$(wait_registered "$job" 10)
expect_eq "$g" "$(job_cvd "$job")" "pflexd's GPUs vs the job's CUDA_VISIBLE_DEVICES"
cap_gpus "$g" 250 600
scancel "$job"
wait_ended "$job" 30
expect_eq "$(job_state "$job")" CANCELLED "state after scancel"
all_original "after scancel of job $job"
[ -z "$(pflexd_job_gpus "$job")" ] || fail "pflexd still lists job $job after scancel"

# -- slurmd killed and restarted mid-job: the job lives on in its slurmstepd;
# its end, seen by the new slurmd, still unregisters it.
job=$(submit_held --gres=gpu:2 --pflex-class=flex50)
wait_state "$job" RUNNING 30
g=$(wait_registered "$job" 10)
cap_gpus "$g" 300 600
bash "$TESTBED" restart-slurmd --dir "$BED" --signal KILL
expect_eq "$(job_state "$job")" RUNNING "job state after slurmd restarted"
for x in ${g//,/ }; do expect_eq "$(limit "$x")" 300000 "GPU $x of the running job after slurmd restarted"; done
release "$job"
wait_ended "$job" 30
expect_eq "$(job_state "$job")" COMPLETED "job that outlived its slurmd"
all_original "after the job that outlived slurmd ended"

# -- slurmd restarted, then the job cancelled: the same.
job=$(submit_held --gres=gpu:4 --pflex-class=rigid)
wait_state "$job" RUNNING 30
g=$(wait_registered "$job" 10)
cap_gpus "$g" 500 600
bash "$TESTBED" restart-slurmd --dir "$BED" --signal TERM
scancel "$job"
wait_ended "$job" 30
all_original "after scancel of job $job past a slurmd restart"

for _ in $(seq 1 50); do [ "$(sinfo -h -N -o %T)" = idle ] && break; sleep 0.2; done
expect_eq "$(sinfo -h -N -o %T)" idle "node state at the end"
api_unix GET /v1/jobs
expect_eq "$(echo "$BODY" | jq '.jobs | length')" 0 "jobs pflexd lists at the end"
echo "PASS: slurm plugin failures"
