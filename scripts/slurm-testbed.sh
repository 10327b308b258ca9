#!/usr/bin/env bash
# A real one-node Slurm cluster on localhost for the test suite (issue 11):
# munged, slurmctld and slurmd from Debian's packages, with every file they
# use (configuration, spool and state directories, munge key and socket, logs,
# pid files, four fake GPU character devices) under one directory.
#
#   slurm-testbed.sh start  --dir DIR [--plugstack FILE] [--prolog-env]
#   slurm-testbed.sh stop   --dir DIR
#   slurm-testbed.sh status --dir DIR
#   slurm-testbed.sh env    --dir DIR     (prints exports: eval "$(... env ...)")
#   slurm-testbed.sh restart-slurmd --dir DIR [--signal SIG]
#
# DIR defaults to $PFLEX_SLURM_DIR. start writes DIR/etc/{slurm,gres,cgroup,
# plugstack}.conf (plugstack.conf is a copy of FILE, else empty), starts the
# daemons as root, and waits (at most 60 s) until the node is idle; on failure
# it prints the daemons' logs, stops what it started and exits 1.
# --prolog-env adds a Prolog= script that saves each job's prolog environment
# to DIR/prolog/JOBID.env (what Slurm hands a prolog, e.g. SLURM_JOB_GPUS).
# restart-slurmd stops slurmd alone with SIG (TERM; KILL for a crash; running
# jobs' slurmstepd live on), starts it again and waits (at most 60 s) until
# the node responds.
# stop cancels every job, stops the daemons (TERM, then KILL after 10 s), and
# kills every process still carrying this test bed's marker in its
# environment (slurmstepd and job processes); it leaves DIR in place.
# Needs root (the daemons run as root) and the packages munge, slurmctld,
# slurmd, slurm-client (scripts/install-deps.sh).
set -euo pipefail

NGPUS=4
READY_S=60
STOP_S=10

die() { echo "error: slurm-testbed: $*" >&2; exit 1; }

usage() {
  echo "usage: slurm-testbed.sh start|stop|status|env|restart-slurmd [--dir DIR] [--plugstack FILE] [--prolog-env] [--signal SIG]" >&2
  exit 2
}

# The environment clients (sinfo, sbatch, ...) need.
print_env() { printf 'export SLURM_CONF=%q\n' "$DIR/etc/slurm.conf"; }

# free_port [NOT]: a TCP port on loopback that nothing listens on now (and
# other than NOT).
free_port() {
  local p
  for _ in $(seq 1 100); do
    p=$((20000 + RANDOM % 12000)) # below Linux's ephemeral range (32768 and up)
    if [ "$p" != "${1:-}" ] && ! ss -Htln "sport = :$p" | grep -q .; then
      echo "$p"
      return 0
    fi
  done
  die "no free port on loopback after 100 tries"
}

write_slurm_conf() {
  local node=$1 cores=$2 ctld_port=$3 slurmd_port=$4 prolog=$5
  cat > "$DIR/etc/slurm.conf" <<EOF
# Written by scripts/slurm-testbed.sh: a one-node test cluster on loopback.
ClusterName=pflextest
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/slurmd
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$DIR/etc/plugstack.conf
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
PrologFlags=Alloc
${prolog:+Prolog=$prolog}
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=300
NodeName=$node NodeAddr=127.0.0.1 Sockets=1 CoresPerSocket=$cores ThreadsPerCore=1 RealMemory=256 Gres=gpu:$NGPUS State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
}

write_gres_conf() {
  local node=$1 i
  : > "$DIR/etc/gres.conf"
  for ((i = 0; i < NGPUS; i++)); do
    # Slurm accepts only character devices as GPU files; major 195 is NVIDIA's.
    [ -c "$DIR/dev/nvidia$i" ] || mknod "$DIR/dev/nvidia$i" c 195 "$i" ||
      die "mknod $DIR/dev/nvidia$i: cannot create a character device here (needs root with CAP_MKNOD)"
    echo "NodeName=$node Name=gpu File=$DIR/dev/nvidia$i" >> "$DIR/etc/gres.conf"
  done
  echo "AutoDetect=off" >> "$DIR/etc/gres.conf"
}

# The prolog of --prolog-env: saves the environment Slurm gives a prolog.
write_prolog() {
  cat > "$DIR/etc/prolog.sh" <<EOF
#!/bin/sh
env > "$DIR/prolog/\$SLURM_JOB_ID.env.tmp" && mv "$DIR/prolog/\$SLURM_JOB_ID.env.tmp" "$DIR/prolog/\$SLURM_JOB_ID.env"
EOF
  chmod 0755 "$DIR/etc/prolog.sh"
}

write_config() {
  local plugstack=$1 prolog_env=$2 node cores prolog=
  node=$(hostname -s)
  cores=$(nproc)
  mkdir -p "$DIR"/{etc,ctld,slurmd,run,log,munge,dev,prolog}
  chmod 0700 "$DIR/munge"
  if [ "$prolog_env" = 1 ]; then
    write_prolog
    prolog=$DIR/etc/prolog.sh
  fi
  local ctld_port
  ctld_port=$(free_port)
  write_slurm_conf "$node" "$cores" "$ctld_port" "$(free_port "$ctld_port")" "$prolog"
  write_gres_conf "$node"
  # Nothing constrained by cgroups (proctrack/linuxproc, task/none).
  echo "CgroupPlugin=autodetect" > "$DIR/etc/cgroup.conf"
  if [ -n "$plugstack" ]; then
    cp "$plugstack" "$DIR/etc/plugstack.conf"
  else
    : > "$DIR/etc/plugstack.conf"
  fi
}

dump_logs() {
  local f
  for f in "$DIR"/log/*.log; do
    [ -f "$f" ] || continue
    echo "---- $f (last 40 lines)" >&2
    tail -n 40 "$f" >&2
  done
}

start_munged() {
  local m=$DIR/munge
  [ -f "$m/munge.key" ] || { dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none; chmod 0400 "$m/munge.key"; }
  PFLEX_SLURM_TESTBED=$DIR munged --force --socket="$m/munge.socket" --key-file="$m/munge.key" \
    --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" \
    --seed-file="$m/munged.seed" ||
    return 1
  wait_for "munged answers" 10 munge_ok
}

munge_ok() { munge -n -S "$DIR/munge/munge.socket" | unmunge -S "$DIR/munge/munge.socket" >/dev/null 2>&1; }

# wait_for WHAT SECONDS CMD...: runs CMD every 0.2 s until it succeeds, for
# at most SECONDS of wall time (a client such as sinfo can itself take
# seconds to give up on a controller that is not there).
wait_for() {
  local what=$1 limit=$2 deadline
  shift 2
  deadline=$((SECONDS + limit))
  while ((SECONDS < deadline)); do
    "$@" && return 0
    sleep 0.2
  done
  echo "error: slurm-testbed: $what: not within $limit s" >&2
  return 1
}

# A daemon in its foreground form (-D), in the background, carrying the marker
# PFLEX_SLURM_TESTBED=DIR, which slurmstepd inherits from slurmd: stop finds
# what this test bed started by it and nothing else.
start_daemon() {
  local name=$1
  shift
  (cd "$DIR" && PFLEX_SLURM_TESTBED=$DIR exec nohup "$@" > "$DIR/log/$name.out" 2>&1 < /dev/null) &
  echo $! > "$DIR/run/$name.launch.pid"
}

ctld_up() { scontrol ping >/dev/null 2>&1; }
# The node answers slurmctld (not down, not "not responding" = '*').
node_responds() {
  local st
  st=$(sinfo -h -N -n "$(hostname -s)" -o %T 2>/dev/null)
  [ -n "$st" ] && [[ $st != *'*' ]] && [[ $st != down* ]]
}
node_idle() { [ "$(sinfo -h -N -n "$(hostname -s)" -o %T 2>/dev/null)" = idle ]; }
# For the start: done waiting when it is up, or when the daemon died.
ctld_up_or_dead() { ! daemon_alive slurmctld || ctld_up; }
node_idle_or_dead() { ! daemon_alive slurmd || ! daemon_alive slurmctld || node_idle; }

cmd_start() {
  local plugstack=$1 prolog_env=$2
  [ "$(id -u)" -eq 0 ] || die "must run as root (the daemons run as root)"
  for p in munged slurmctld slurmd sinfo; do
    command -v "$p" >/dev/null || die "$p not found: run scripts/install-deps.sh"
  done
  if daemon_alive slurmctld || daemon_alive slurmd || daemon_alive munged; then
    die "a test bed already runs in $DIR (slurm-testbed.sh stop --dir $DIR)"
  fi
  write_config "$plugstack" "$prolog_env"
  export SLURM_CONF=$DIR/etc/slurm.conf
  if ! start_munged; then
    dump_logs
    cmd_stop
    die "munged did not start"
  fi
  # The ports were free when chosen; another program may take one before the
  # daemons bind it (seen with tests running side by side): then choose new
  # ones and start again, at most three times.
  local try
  for try in 1 2 3; do
    start_daemon slurmctld slurmctld -D -i
    wait_for "slurmctld answers" "$READY_S" ctld_up_or_dead || true
    if daemon_alive slurmctld; then
      start_daemon slurmd slurmd -D -N "$(hostname -s)"
      wait_for "node $(hostname -s) idle" "$READY_S" node_idle_or_dead && daemon_alive slurmd && break
    fi
    if ! grep -qs "Address already in use" "$DIR"/log/slurmctld.log "$DIR"/log/slurmd.log || [ "$try" = 3 ]; then
      try=fail
      break
    fi
    echo "slurm-testbed: a port was taken meanwhile; new ports (try $((try + 1)))" >&2
    stop_daemon slurmd
    stop_daemon slurmctld
    rm -f "$DIR"/run/slurmctld.pid "$DIR"/run/slurmd.pid
    mv "$DIR/log/slurmctld.log" "$DIR/log/slurmctld.try$try.log" 2>/dev/null || true
    mv "$DIR/log/slurmd.log" "$DIR/log/slurmd.try$try.log" 2>/dev/null || true
    write_config "$plugstack" "$prolog_env"
  done
  if [ "$try" = fail ]; then
    dump_logs
    cmd_stop
    die "the test bed did not come up"
  fi
  echo "slurm-testbed: up in $DIR (node $(hostname -s), $NGPUS GPUs)" >&2
}

# The pid a daemon wrote, else the one we launched.
daemon_pid() {
  local f
  for f in "$DIR/run/$1.pid" "$DIR/run/$1.launch.pid"; do
    [ -s "$f" ] && cat "$f" 2>/dev/null && return 0
  done
  return 1
}

# daemon_alive NAME: its pid is alive and still carries our marker or runs
# our socket (munged), so a recycled pid is never taken for it.
daemon_alive() {
  local pid
  pid=$(daemon_pid "$1") || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "$1"
}

stop_daemon() {
  local name=$1 pid i
  daemon_alive "$name" || return 0
  pid=$(daemon_pid "$name")
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < STOP_S * 5; i++)); do
    daemon_alive "$name" || return 0
    sleep 0.2
  done
  echo "slurm-testbed: $name ($pid) ignored SIGTERM for $STOP_S s; SIGKILL" >&2
  kill -KILL "$pid" 2>/dev/null || true
}

# Processes this test bed started: the daemons (the marker), slurmstepd
# (slurmd clears its environment, but it keeps DIR/log/slurmd.log open) and
# job processes (a job id and this test bed's SLURM_CONF, exported from the
# submitting shell; that shell itself has no job id).
marked_pids() {
  local f pid env
  for f in /proc/[0-9]*/environ; do
    pid=${f#/proc/}
    pid=${pid%/environ}
    env=$(tr '\0' '\n' 2>/dev/null < "$f") || continue
    if grep -qxF "PFLEX_SLURM_TESTBED=$DIR" <<< "$env" ||
      { grep -qxF "SLURM_CONF=$DIR/etc/slurm.conf" <<< "$env" && grep -q '^SLURM_JOB_ID=' <<< "$env"; } ||
      { [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmstepd ] &&
        find "/proc/$pid/fd" -lname "$DIR/*" 2>/dev/null | grep -q .; }; then
      echo "$pid"
    fi
  done
  return 0
}

no_jobs() { [ -z "$(squeue -h -o %i 2>/dev/null)" ]; }

cmd_stop() {
  local pids
  [ -f "$DIR/etc/slurm.conf" ] || return 0
  export SLURM_CONF=$DIR/etc/slurm.conf
  if daemon_alive slurmctld; then
    scancel --quiet --user=root 2>/dev/null || true
    wait_for "jobs ended after scancel" "$STOP_S" no_jobs || true
  fi
  stop_daemon slurmd
  stop_daemon slurmctld
  stop_daemon munged
  pids=$(marked_pids | grep -vxe "$$" -e "$BASHPID" || true)
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
  fi
  rm -f "$DIR"/run/*.pid "$DIR/munge/munge.socket" "$DIR/munge/munge.socket.lock"
}

slurmd_starts() { grep -c "slurmd version .* started" "$DIR/log/slurmd.log" || true; }
slurmd_started_since() { [ "$(slurmd_starts)" -gt "$1" ]; }

cmd_restart_slurmd() {
  local sig=$1 pid i starts
  export SLURM_CONF=$DIR/etc/slurm.conf
  starts=$(slurmd_starts)
  daemon_alive slurmd || die "slurmd does not run in $DIR"
  pid=$(daemon_pid slurmd)
  kill -"$sig" "$pid" || die "cannot signal slurmd ($pid)"
  for ((i = 0; i < STOP_S * 5; i++)); do
    daemon_alive slurmd || break
    sleep 0.2
  done
  daemon_alive slurmd && die "slurmd ($pid) still runs $STOP_S s after SIG$sig"
  rm -f "$DIR/run/slurmd.pid"
  start_daemon slurmd slurmd -D -N "$(hostname -s)"
  # slurmctld may not have noticed the old one gone: wait for the new one to
  # log its start, then for the node to respond.
  wait_for "slurmd restarted" "$READY_S" slurmd_started_since "$starts" || true
  if ! wait_for "node $(hostname -s) responding" "$READY_S" node_responds; then
    dump_logs
    die "slurmd did not come back"
  fi
  echo "slurm-testbed: slurmd restarted after SIG$sig (pid $(daemon_pid slurmd))" >&2
}

cmd_status() {
  local n rc=0
  for n in munged slurmctld slurmd; do
    if daemon_alive "$n"; then
      echo "$n: running (pid $(daemon_pid "$n"))"
    else
      echo "$n: not running"
      rc=1
    fi
  done
  if [ $rc -eq 0 ]; then
    export SLURM_CONF=$DIR/etc/slurm.conf
    sinfo -h -N -o "node %N: %T, gres %G"
  fi
  return $rc
}

main() {
  local cmd=${1:-} plugstack="" prolog_env=0 sig=TERM
  [ $# -gt 0 ] && shift
  DIR=${PFLEX_SLURM_DIR:-}
  while [ $# -gt 0 ]; do
    case $1 in
      --dir) DIR=${2:?--dir needs a directory}; shift 2 ;;
      --plugstack) plugstack=${2:?--plugstack needs a file}; shift 2 ;;
      --prolog-env) prolog_env=1; shift ;;
      --signal) sig=${2:?--signal needs a signal name}; shift 2 ;;
      *) usage ;;
    esac
  done
  [ -n "$DIR" ] || die "no directory: give --dir DIR or set PFLEX_SLURM_DIR"
  [ -z "$plugstack" ] || [ -r "$plugstack" ] || die "--plugstack $plugstack: not readable"
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd -P)
  case $cmd in
    start) cmd_start "$plugstack" "$prolog_env" ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    env) print_env ;;
    restart-slurmd) cmd_restart_slurmd "$sig" ;;
    *) usage ;;
  esac
}

main "$@"
