#!/usr/bin/env bash
# The Slurm test bed (scripts/slurm-testbed.sh) on its own: it comes up, a job
# asking for two GPUs gets two of the fake devices as CUDA_VISIBLE_DEVICES,
# its prolog sees the same GPUs in SLURM_JOB_GPUS, and stop ends every daemon,
# slurmstepd and job process it started.
set -euo pipefail
: "${PFLEX_SOURCE_DIR:?}"
TESTBED=$PFLEX_SOURCE_DIR/scripts/slurm-testbed.sh

fail() { echo "FAIL: $*" >&2; exit 1; }

T=$(mktemp -d)
cleanup() { bash "$TESTBED" stop --dir "$T/slurm" || true; rm -rf "$T"; }
trap cleanup EXIT

start=$(date +%s%N)
bash "$TESTBED" start --dir "$T/slurm" --prolog-env
echo "test bed up in $((($(date +%s%N) - start) / 1000000)) ms"
eval "$(bash "$TESTBED" env --dir "$T/slurm")"
bash "$TESTBED" status --dir "$T/slurm" | grep -q "gres gpu:4" || fail "node does not offer gpu:4"

cat > "$T/job.sh" <<'EOF'
#!/bin/sh
echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
EOF
jid=$(cd "$T" && timeout 60 sbatch --parsable --wait --gres=gpu:2 -o "$T/job-%j.out" "$T/job.sh") ||
  fail "sbatch --wait failed"
cvd=$(sed -n 's/^CUDA_VISIBLE_DEVICES=//p' "$T/job-$jid.out")
echo "job $jid: CUDA_VISIBLE_DEVICES=$cvd"
[[ $cvd =~ ^[0-3],[0-3]$ ]] || fail "CUDA_VISIBLE_DEVICES '$cvd' is not two GPU indices"

penv=$T/slurm/prolog/$jid.env
[ -f "$penv" ] || fail "the prolog of job $jid did not run ($penv missing)"
gpus=$(sed -n 's/^SLURM_JOB_GPUS=//p' "$penv")
echo "job $jid prolog: SLURM_JOB_GPUS=$gpus"
[[ $gpus =~ ^[0-3],[0-3]$ ]] || fail "prolog SLURM_JOB_GPUS '$gpus' is not two GPU indices"
# Without a device cgroup (task/none) the job's numbering is the host's.
[ "$gpus" = "$cvd" ] || fail "prolog GPUs $gpus differ from the job's $cvd"

# A job still running when the test bed stops: stop must leave nothing behind.
jid2=$(cd "$T" && sbatch --parsable --gres=gpu:1 -o /dev/null --wrap "sleep 300")
for _ in $(seq 1 100); do
  [ "$(squeue -h -j "$jid2" -o %T)" = RUNNING ] && break
  sleep 0.2
done
[ "$(squeue -h -j "$jid2" -o %T)" = RUNNING ] || fail "job $jid2 did not start"
pids=$(cat "$T"/slurm/run/slurmctld.pid "$T"/slurm/run/slurmd.pid "$T"/slurm/run/munged.pid)
bash "$TESTBED" stop --dir "$T/slurm"
for p in $pids; do
  if [ -r "/proc/$p/cmdline" ] && [ -n "$(tr -d '\0' < "/proc/$p/cmdline")" ]; then
    fail "daemon $p still runs after stop"
  fi
done
for p in $(pgrep -x slurmstepd || true) $(pgrep -x sleep || true); do
  if find "/proc/$p/fd" -lname "$T/*" 2>/dev/null | grep -q . ||
    tr '\0' '\n' 2>/dev/null < "/proc/$p/environ" | grep -qxF "SLURM_JOB_ID=$jid2"; then
    fail "process $p of the test bed survived stop"
  fi
done
if bash "$TESTBED" status --dir "$T/slurm" >/dev/null; then fail "status says running after stop"; fi
echo "PASS: slurm test bed"
