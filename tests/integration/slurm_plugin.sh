#!/usr/bin/env bash
# pflex_spank.so on a real Slurm (scripts/slurm-testbed.sh) with a real
# pflexd on the fake NVML: bad option values refuse the submission with a
# clear message; a job's prolog registers its GPUs with pflexd, its end
# unregisters them and pflexd restores their limits; two jobs of different
# classes hold disjoint GPUs; a stale registration on a new job's GPUs is
# dropped; an srun job is registered before its task starts; a stalled
# pflexd times out; a pflexd that is down at the prolog or the
# epilog fails no job and drains no node.
source "$(dirname "$0")/slurm_common.bash"

start_pflexd
start_bed timeout_ms=1000

# -- Bad values: refused by sbatch, srun and salloc, nothing submitted.
refused() {
  local want=$1 out
  shift
  if out=$(cd "$T" && timeout 30 "$@" 2>&1); then fail "$* was accepted: $out"; fi
  grep -qF "$want" <<< "$out" || fail "$*: message lacks '$want': $out"
}
refused "error: pflex: --pflex-class=flex99: unknown class (known: rigid, flex10, flex25, flex50)" \
  sbatch --pflex-class=flex99 --wrap true
refused "error: pflex: --pflex-weight=-2: want a number in (0, 1000]" sbatch --pflex-weight=-2 --wrap true
refused "error: pflex: --pflex-min-throughput=1.5: want a fraction of uncapped throughput in (0, 1]" \
  sbatch --pflex-min-throughput=1.5 --wrap true
refused "error: pflex: --pflex-class=Rigid: unknown class" srun --pflex-class=Rigid true
refused "error: pflex: --pflex-weight=lots: want a number" salloc --pflex-weight=lots true
printf '#!/bin/sh\n#SBATCH --pflex-class=bogus\ntrue\n' > "$T/bad.sh"
refused "error: pflex: --pflex-class=bogus: unknown class" sbatch "$T/bad.sh"
[ -z "$(squeue -h --states=all -o %i)" ] || fail "a refused submission left a job: $(squeue --states=all)"

# -- Two jobs of different classes: each registered with its own GPUs.
rigid=$(submit_held --gres=gpu:1 --pflex-class=rigid --pflex-weight=2)
flex=$(submit_held --gres=gpu:2 --pflex-class=flex50 --pflex-min-throughput=0.6)
wait_state "$rigid" RUNNING 30
wait_state "$flex" RUNNING 30
g_rigid=$(wait_registered "$rigid" 10)
g_flex=$(wait_registered "$flex" 10)
echo "rigid job $rigid: GPUs $g_rigid; flex50 job $flex: GPUs $g_flex"
expect_eq "$g_rigid" "$(job_cvd "$rigid")" "rigid job: pflexd's GPUs vs CUDA_VISIBLE_DEVICES"
expect_eq "$g_flex" "$(job_cvd "$flex")" "flex job: pflexd's GPUs vs CUDA_VISIBLE_DEVICES"
[[ $g_flex =~ ^[0-3],[0-3]$ ]] || fail "flex job has GPUs '$g_flex', want two"
for g in ${g_flex//,/ }; do
  [[ ,$g_rigid, == *",$g,"* ]] && fail "GPU $g registered for both jobs"
done
grep -qx "PFLEX_CLASS=rigid" "$T/job-$rigid.out" || fail "rigid job's tasks lack PFLEX_CLASS=rigid"
grep -qx "PFLEX_WEIGHT=2" "$T/job-$rigid.out" || fail "rigid job's tasks lack PFLEX_WEIGHT=2"
grep -qx "PFLEX_MIN_THROUGHPUT=0.6" "$T/job-$flex.out" || fail "flex job's tasks lack PFLEX_MIN_THROUGHPUT"
slurmd_log_has "pflex: job $flex: GPUs $g_flex registered with pflexd (class flex50, weight 1, min throughput 0.6)" ||
  fail "slurmd log lacks the flex job's registration with its options"
# The options reach pflexd, where the controller reads them (GET /v1/jobs).
api_unix GET /v1/jobs
expect_eq "$(echo "$BODY" | jq -c --arg j "$rigid" '.jobs[] | select(.id == $j) | [.class, .weight, .min_throughput]')" \
  '["rigid",2,null]' "rigid job's options at pflexd"
expect_eq "$(echo "$BODY" | jq -c --arg j "$flex" '.jobs[] | select(.id == $j) | [.class, .weight, .min_throughput]')" \
  '["flex50",null,0.6]' "flex job's options at pflexd"

# -- A cut on the flexible job's GPUs; its end restores them, the rigid job's stay.
cap_gpus "$g_flex" 350 600
cap_gpus "$g_rigid" 600 600
release "$flex"
wait_ended "$flex" 30
[ -z "$(pflexd_job_gpus "$flex")" ] || fail "pflexd still lists job $flex after its end"
for g in ${g_flex//,/ }; do expect_eq "$(limit "$g")" "$ORIG_MW" "GPU $g after the flex job ended"; done
expect_eq "$(limit "$g_rigid")" 600000 "the rigid job's GPU while it still runs"
slurmd_log_has "pflex: job $flex: GPUs $g_flex unregistered; pflexd restores their limits" ||
  fail "slurmd log lacks the flex job's unregistration"
release "$rigid"
wait_ended "$rigid" 30
all_original "after both jobs ended"
api_unix GET /v1/jobs
expect_eq "$(echo "$BODY" | jq '.jobs | length')" 0 "jobs pflexd lists after both ended"

# -- A stale registration on the GPUs Slurm gives a new job (a job whose
# epilog never reached pflexd, capped): the prolog unregisters it, pflexd
# restores its GPUs, and the new job is registered.
api_unix PUT /v1/jobs/stale7 '{"gpus":[0,1,2,3]}'
expect_code 200 "registering a stale job by hand"
cap_gpus 0,1,2,3 450 600
new=$(submit_held --gres=gpu:2 --pflex-class=flex10)
wait_state "$new" RUNNING 30
g_new=$(wait_registered "$new" 10)
expect_eq "$g_new" "$(job_cvd "$new")" "job registered over a stale one"
[ -z "$(pflexd_job_gpus stale7)" ] || fail "the stale job is still registered"
slurmd_log_has "pflex: job $new: unregistered stale job stale7 from its GPUs" || fail "no log of the stale job"
all_original "after the stale job was dropped"
release "$new"
wait_ended "$new" 30

# -- srun alone (no sbatch): with PrologFlags=Alloc the job is registered
# before its task starts; the task itself finds itself in pflexd's list.
seen=$(cd "$T" && timeout 60 srun --gres=gpu:1 --pflex-class=flex10 bash -c \
  'curl -s --unix-socket "$0" http://localhost/v1/jobs | jq -r --arg id "$SLURM_JOB_ID" ".jobs[] | select(.id == \$id) | .gpus[]"' "$SOCK") ||
  fail "srun job failed"
[[ $seen =~ ^[0-3]$ ]] || fail "an srun job's task did not find itself registered with one GPU: '$seen'"
all_original "after the srun job"

# -- pflexd stalled (SIGSTOP) at the prolog: the request times out after
# timeout_ms, the job runs.
kill -STOP "$PID"
stall=$(submit_held --gres=gpu:1)
wait_state "$stall" RUNNING 30
for _ in $(seq 1 50); do slurmd_log_has "pflex: job $stall: pflexd at $SOCK: Timeout was reached" && break; sleep 0.2; done
slurmd_log_has "pflex: job $stall: pflexd at $SOCK: Timeout was reached" ||
  fail "no timeout logged with pflexd stalled: $(grep pflex "$BED/log/slurmd.log" | tail -n 2)"
kill -CONT "$PID"
release "$stall"
wait_ended "$stall" 30
# pflexd may still have read the timed-out registration: the epilog took it back.
[ -z "$(pflexd_job_gpus "$stall")" ] || fail "pflexd lists the stalled job after its end"
all_original "after the job that met a stalled pflexd"

# -- A job without GPUs: nothing registered, nothing logged as an error.
nogpu=$(cd "$T" && sbatch --parsable --wait --pflex-class=flex10 -o /dev/null --wrap true)
wait_ended "$nogpu" 30
slurmd_log_has "pflex: job $nogpu:" && fail "a job without GPUs made the plugin talk to pflexd"

# -- pflexd's socket in a directory any user may change: the prolog does not
# use it (a user could have put their own socket there).
chmod 0777 "$T/run"
open=$(submit_held --gres=gpu:1)
wait_state "$open" RUNNING 30
for _ in $(seq 1 50); do slurmd_log_has "pflex: job $open: pflexd at $SOCK: not a socket owned by root" && break; sleep 0.2; done
slurmd_log_has "pflex: job $open: pflexd at $SOCK: not a socket owned by root in a directory only root can change" ||
  fail "the prolog used a socket in a world-writable directory: $(grep pflex "$BED/log/slurmd.log" | tail -n 2)"
[ -z "$(pflexd_job_gpus "$open")" ] || fail "job $open registered through an untrusted socket path"
chmod 0755 "$T/run"
release "$open"
wait_ended "$open" 30

# -- pflexd down at the prolog: the job runs (on_error=log), the node stays up;
# pflexd back before the epilog: it does not know the job, the epilog succeeds.
stop_pflexd TERM
down=$(submit_held --gres=gpu:2 --pflex-class=flex25)
wait_state "$down" RUNNING 30
for _ in $(seq 1 50); do slurmd_log_has "pflex: job $down: pflexd at $SOCK" && break; sleep 0.2; done
slurmd_log_has "the job runs without pflexd knowing its GPUs (on_error=log)" ||
  fail "no prolog error logged with pflexd down: $(grep pflex "$BED/log/slurmd.log" | tail -n 3)"
start_pflexd
release "$down"
wait_ended "$down" 30
expect_eq "$(job_state "$down")" COMPLETED "job whose prolog found no pflexd"
slurmd_log_has "pflex: job $down: pflexd does not know the job" || fail "epilog did not report the unknown job"

# -- pflexd killed (-9) while the job's GPUs are capped under a 3 s lease,
# and still down at the epilog: the job completes, the node stays idle, and
# the restarted pflexd brings the GPUs back when the lease runs out.
crash=$(submit_held --gres=gpu:2 --pflex-class=flex25)
wait_state "$crash" RUNNING 30
g_crash=$(wait_registered "$crash" 10)
cap_gpus "$g_crash" 300 3
stop_pflexd KILL
release "$crash"
wait_ended "$crash" 30
expect_eq "$(job_state "$crash")" COMPLETED "job whose epilog found no pflexd"
slurmd_log_has "pflex: job $crash: could not unregister GPUs $g_crash" || fail "epilog did not log pflexd down"
st=$(sinfo -h -N -o %T)
expect_eq "$st" idle "node state after an epilog without pflexd"
start_pflexd
all_original "after pflexd restarted past the crashed job's lease" 10
echo "PASS: slurm plugin"
