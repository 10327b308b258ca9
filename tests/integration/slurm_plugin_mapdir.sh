#!/usr/bin/env bash
# pflex_spank.so with mapping_dir: the prolog also writes the job's GPUs into
# the job-mapping directory pflexd watches (dcgm-exporter's format), so a
# pflexd killed (-9) and restarted while the job runs knows the job again and
# the job's end still restores its GPUs; a stale entry of an old job is
# replaced; the epilog removes the job's entries; a directory others may
# write is not used. Real Slurm, real pflexd, fake NVML.
source "$(dirname "$0")/slurm_common.bash"

MAP=$T/map
mkdir -m 0755 "$MAP"
echo 999 > "$MAP/0" # an old job whose epilog never ran
start_pflexd --mapping-dir "$MAP"
start_bed mapping_dir="$MAP"

job=$(submit_held --gres=gpu:2 --pflex-class=flex25)
wait_state "$job" RUNNING 30
g=$(wait_registered "$job" 10)
for x in ${g//,/ }; do
  expect_eq "$(cat "$MAP/$x")" "$job" "mapping entry of GPU $x"
done
[[ ,$g, == *,0,* ]] || fail "Slurm did not give GPU 0 to the job ($g): the stale-entry check needs it"
for _ in $(seq 1 25); do [ -z "$(pflexd_job_gpus 999)" ] && break; sleep 0.2; done
[ -z "$(pflexd_job_gpus 999)" ] || fail "the stale job 999 is still mapped"
cap_gpus "$g" 300 600

# pflexd crashes and comes back while the job runs: its caps resume from the
# lease, and the job is known again from the mapping directory.
stop_pflexd KILL
start_pflexd --mapping-dir "$MAP"
expect_eq "$(wait_registered "$job" 10)" "$g" "the job's GPUs in the restarted pflexd"
api_unix GET /v1/jobs
expect_eq "$(echo "$BODY" | jq -r --arg id "$job" '.jobs[] | select(.id == $id) | .source')" mapping_dir \
  "where the restarted pflexd knows the job from"
for x in ${g//,/ }; do expect_eq "$(limit "$x")" 300000 "GPU $x under its resumed lease"; done

release "$job"
wait_ended "$job" 30
all_original "after the job ended past a pflexd restart"
for x in 0 1 2 3; do
  [ -e "$MAP/$x" ] && [ "$(cat "$MAP/$x")" = "$job" ] && fail "mapping entry $x of job $job left behind"
done
for _ in $(seq 1 25); do [ -z "$(pflexd_job_gpus "$job")" ] && break; sleep 0.2; done
[ -z "$(pflexd_job_gpus "$job")" ] || fail "pflexd still maps job $job after its end"
slurmd_log_has "pflex: job $job: GPUs $g unregistered; pflexd restores their limits" ||
  fail "the epilog did not unregister the job from the restarted pflexd"

# A mapping directory others may write: not used, the job still registered.
chmod 0777 "$MAP"
job=$(submit_held --gres=gpu:1)
wait_state "$job" RUNNING 30
wait_registered "$job" 10 > /dev/null
slurmd_log_has "pflex: job $job: job mapping directory $MAP: must be owned by root and writable by no one else; a pflexd restarted during the job will not know it" ||
  fail "no log of the untrusted mapping directory: $(grep pflex "$BED/log/slurmd.log" | tail -n 2)"
[ -z "$(ls -A "$MAP")" ] || fail "entries written into an untrusted directory: $(ls -A "$MAP")"
chmod 0755 "$MAP"
release "$job"
wait_ended "$job" 30
all_original "at the end"
echo "PASS: slurm plugin mapping dir"
