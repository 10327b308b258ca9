#!/usr/bin/env bash
# pflex_spank.so with on_error=fail: a prolog that cannot register the job's
# GPUs fails, so Slurm requeues the job held and drains the node; once pflexd
# is back, resuming the node and releasing the job (as an operator would)
# runs it registered. And a
# bad plugstack.conf argument refuses every submission, naming the argument.
source "$(dirname "$0")/slurm_common.bash"

start_bed on_error=fail classes=gold,silver

job=$(submit_held --gres=gpu:2 --pflex-class=gold)
for _ in $(seq 1 100); do
  [ "$(sinfo -h -N -o %T)" = drained ] && break
  sleep 0.2
done
expect_eq "$(sinfo -h -N -o %T)" drained "node state after a failed prolog (on_error=fail)"
sinfo -h -N -o %E | grep -q "Prolog error" || fail "drain reason: $(sinfo -h -N -o %E)"
squeue -h -j "$job" -o %r | grep -q "held" || fail "job $job not held after the failed prolog: $(squeue -h -j "$job" -o '%T %r')"
slurmd_log_has "pflex: job $job: pflexd at $SOCK: No such file or directory; failing the prolog (on_error=fail)" ||
  fail "slurmd log lacks the prolog's failure: $(grep pflex "$BED/log/slurmd.log" | tail -n 3)"

start_pflexd
scontrol update nodename="$(hostname -s)" state=resume
scontrol release "$job"
# Slurm delays a requeued job's start (BeginTime, about two minutes): now.
scontrol update jobid="$job" StartTime=now
wait_state "$job" RUNNING 30
g=$(wait_registered "$job" 10)
expect_eq "$g" "$(job_cvd "$job")" "the released job's GPUs in pflexd"
release "$job"
wait_ended "$job" 30
all_original "after the released job ended"

# The class list comes from the plugstack arguments.
out=$(cd "$T" && sbatch --pflex-class=rigid --wrap true 2>&1) && fail "class rigid accepted with classes=gold,silver"
grep -qF "pflex: --pflex-class=rigid: unknown class (known: gold, silver)" <<< "$out" || fail "message: $out"

# sbatch reads plugstack.conf itself: a bad argument there refuses it.
echo "required $SPANK_SO socket=$SOCK timeout_ms=lots" > "$BED/etc/plugstack.conf"
out=$(cd "$T" && sbatch --wrap true 2>&1) && fail "sbatch ran with a bad plugstack.conf: $out"
grep -qF "pflex: plugstack argument timeout_ms=lots: want milliseconds in [100, 60000] (PlugStackConfig)" <<< "$out" ||
  fail "message for a bad plugstack argument: $out"
echo "PASS: slurm plugin strict"
