#!/usr/bin/env bash
# pflex_spank.so with on_error=fail: a prolog that cannot register the job's
# GPUs fails, so Slurm requeues the job held and drains the node; once pflexd
# is back, resuming the node and releasing the job (as an operator would)
# runs it registered. A class the node's configuration no longer knows is
# logged and the job runs. And a bad plugstack.conf argument refuses every
# submission, naming the argument.
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

# Configurations out of step: the class the submission host accepted is
# unknown to the node by the time the job starts: logged, the job runs.
drift=$(cd "$T" && sbatch --parsable --hold --gres=gpu:1 --pflex-class=silver -o "$T/job-%j.out" "$T/held.sh")
# (The node's classes now come from pflex-controller's own config file.)
printf '[controller]\nround_s = 1\n[class gold]\nweight = 2\n[class bronze]\nfloor_pct = 50\n' > "$T/controller.conf"
chmod 0644 "$T/controller.conf"
echo "required $SPANK_SO socket=$SOCK on_error=fail controller_config=$T/controller.conf" > "$BED/etc/plugstack.conf"
scontrol release "$drift"
wait_state "$drift" RUNNING 30
wait_registered "$drift" 10 > /dev/null
for _ in $(seq 1 50); do slurmd_log_has "pflex: --pflex-class=silver: unknown class (known: gold, bronze) (on this node; the job runs without it)" && break; sleep 0.2; done
slurmd_log_has "pflex: --pflex-class=silver: unknown class (known: gold, bronze) (on this node; the job runs without it)" ||
  fail "no log of the class the node does not know: $(grep pflex "$BED/log/slurmd.log" | tail -n 3)"
grep -q '^PFLEX_CLASS=' "$T/job-$drift.out" && fail "the job's tasks got a class the node does not know"
release "$drift"
wait_ended "$drift" 30
expect_eq "$(job_state "$drift")" COMPLETED "job with a class unknown to its node"
all_original "after the job with an unknown class"

# sbatch reads plugstack.conf itself: a bad argument there refuses it.
echo "required $SPANK_SO socket=$SOCK timeout_ms=lots" > "$BED/etc/plugstack.conf"
out=$(cd "$T" && sbatch --wrap true 2>&1) && fail "sbatch ran with a bad plugstack.conf: $out"
grep -qF "pflex: plugstack argument timeout_ms=lots: want milliseconds in [100, 60000] (PlugStackConfig)" <<< "$out" ||
  fail "message for a bad plugstack argument: $out"
echo "PASS: slurm plugin strict"
