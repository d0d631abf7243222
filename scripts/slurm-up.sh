#!/usr/bin/env bash
# slurm-up.sh: a real single-machine Slurm for Clearhouse's Slurm backend and its tests.
#
# Installs Debian's packages (munge, slurmctld, slurmd, slurmdbd, slurm-client) where they
# are missing, starts MariaDB where it is not running, writes slurm.conf, slurmdbd.conf,
# gres.conf and cgroup.conf into a state directory ($CLEARHOUSE_SLURM_DIR, by default
# /tmp/clearhouse-slurm), starts munged, slurmdbd, slurmctld and slurmd as root, registers
# the cluster, and prints the environment the tests read. Idempotent: run it again and it
# keeps what runs and only starts what is stopped. scripts/slurm-down.sh stops it all.
#
# Choices (docs/slurm.md explains them):
#   - one node, this machine, claiming $CLEARHOUSE_SLURM_CPUS CPUs (16), $CLEARHOUSE_SLURM_MEM
#     MiB (65536) and 4 generic GPUs whatever it has (SlurmdParameters=config_overrides; the
#     GPUs are a count without device files, which Slurm accepts for scheduling);
#   - accounting in slurmdbd on MariaDB, AccountingStorageEnforce=associations,limits,qos,safe;
#   - PreemptType=preempt/qos with PreemptMode=CANCEL: a preempted best-effort job ends
#     (state PREEMPTED) and the Clearhouse server, not Slurm, decides when it runs again;
#   - no cgroups (proctrack/linuxproc, task/none): the daemons run in containers too;
#   - loopback without delayed ACKs (quickack on the route to 127.0.0.1; step 2b).
set -euo pipefail

dir=${CLEARHOUSE_SLURM_DIR:-/tmp/clearhouse-slurm}
cluster=${CLEARHOUSE_SLURM_CLUSTER:-clearhouse}
cpus=${CLEARHOUSE_SLURM_CPUS:-16}
mem=${CLEARHOUSE_SLURM_MEM:-65536}
gpus=${CLEARHOUSE_SLURM_GPUS:-4}
db=${CLEARHOUSE_SLURM_DB:-clearhouse_slurm_acct}
host=$(hostname -s)
start=$(date +%s.%N)

log() { echo "slurm-up: $*" >&2; }

# 1. Packages.
need=()
for pair in munged:munge slurmctld:slurmctld slurmd:slurmd slurmdbd:slurmdbd sacctmgr:slurm-client; do
  command -v "${pair%%:*}" >/dev/null || need+=("${pair#*:}")
done
[ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# 2. MariaDB on 127.0.0.1:3306 (root, no password).
if ! mysqladmin -uroot -h127.0.0.1 --connect-timeout=2 ping >/dev/null 2>&1; then
  log "starting MariaDB"
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
  [ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql >/dev/null
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql
  for _ in $(seq 60); do
    mysqladmin -uroot -h127.0.0.1 --connect-timeout=2 ping >/dev/null 2>&1 && break
    sleep 0.5
  done
fi

# 2b. Loopback without delayed ACKs. Slurm's commands and daemons send each message as a
# 4-byte length, then the body, in two writes on sockets without TCP_NODELAY: Nagle holds
# the body until the length is acknowledged, and Linux delays that ACK up to 40 ms, so
# each of a command's 4 or 5 round trips took ~90 ms (sacctmgr 0.45 s, of which 0.05 s
# is its work). quickack on the loopback route to 127.0.0.1, which Slurm uses here,
# acknowledges at once. Best effort: without CAP_NET_ADMIN Slurm works, slower. Not
# kept across a reboot; this script sets it again.
route=$(ip route show table local 127.0.0.1 2>/dev/null | head -1 || true)
if [ -n "$route" ] && [[ $route != *quickack* ]]; then
  # shellcheck disable=SC2086 # the route's words, as ip printed them
  ip route change table local $route quickack 1 2>/dev/null ||
    log "could not set quickack on the loopback route: each Slurm command takes ~0.4 s longer"
fi

# 3. Configuration.
mkdir -p "$dir"/{state,spool,log,run,dev}
# The GPUs: a count with stand-in device files (character devices like /dev/null).
for i in $(seq 0 $((gpus-1))); do [ -e "$dir/dev/gpu$i" ] || mknod "$dir/dev/gpu$i" c 1 3 2>/dev/null || touch "$dir/dev/gpu$i"; done
cat >"$dir/slurm.conf.new" <<EOF
# Written by scripts/slurm-up.sh for Clearhouse; rewritten on every run.
ClusterName=$cluster
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=${CLEARHOUSE_SLURMCTLD_PORT:-6817}
SlurmdPort=${CLEARHOUSE_SLURMD_PORT:-6818}
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
DebugFlags=Gres
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SwitchType=switch/none
MaxJobCount=30000
MinJobAge=30
KillWait=5
# Scheduling
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=5,default_queue_depth=200
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
PriorityType=priority/multifactor
PreemptType=preempt/qos
PreemptMode=CANCEL
# Accounting
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=${CLEARHOUSE_SLURMDBD_PORT:-6819}
AccountingStorageEnforce=associations,limits,qos,safe
AccountingStorageTRES=gres/gpu
JobCompType=jobcomp/none
# The node: this machine, claiming what the tests need.
GresTypes=gpu
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem Gres=gpu:$gpus State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$dir/gres.conf.new" <<EOF
AutoDetect=off
NodeName=$host Name=gpu Count=$gpus File=$dir/dev/gpu[0-$((gpus-1))]
EOF
cat >"$dir/cgroup.conf.new" <<EOF
CgroupPlugin=autodetect
EOF
cat >"$dir/slurmdbd.conf.new" <<EOF
AuthType=auth/munge
DbdHost=$host
DbdAddr=127.0.0.1
DbdPort=${CLEARHOUSE_SLURMDBD_PORT:-6819}
SlurmUser=root
LogFile=$dir/log/slurmdbd.log
PidFile=$dir/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageUser=root
StorageLoc=$db
EOF
changed=0
for f in slurm.conf gres.conf cgroup.conf slurmdbd.conf; do
  if ! cmp -s "$dir/$f.new" "$dir/$f" 2>/dev/null; then changed=1; mv "$dir/$f.new" "$dir/$f"; else rm "$dir/$f.new"; fi
done
chmod 600 "$dir/slurmdbd.conf"
export SLURM_CONF=$dir/slurm.conf

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
stop() { running "$1" && kill "$(cat "$1")" && for _ in $(seq 40); do running "$1" || break; sleep 0.25; done; rm -f "$1"; }
if [ $changed = 1 ]; then # a new configuration: restart what runs with the old one
  stop "$dir/run/slurmd.pid" || true
  stop "$dir/run/slurmctld.pid" || true
  stop "$dir/run/slurmdbd.pid" || true
fi

# 4. munge.
mkdir -p /run/munge && chown munge:munge /run/munge
if ! munge -n </dev/null >/dev/null 2>&1; then
  log "starting munged"
  [ -s /etc/munge/munge.key ] || { mungekey --create --keyfile=/etc/munge/munge.key; chown munge:munge /etc/munge/munge.key; chmod 600 /etc/munge/munge.key; }
  su -s /bin/sh munge -c "/usr/sbin/munged" 2>/dev/null || /usr/sbin/munged --force
  for _ in $(seq 20); do munge -n </dev/null >/dev/null 2>&1 && break; sleep 0.25; done
fi

# 5. slurmdbd, then the cluster and Clearhouse's QOS in it, then slurmctld and slurmd.
if ! running "$dir/run/slurmdbd.pid"; then
  log "starting slurmdbd"
  slurmdbd
fi
for _ in $(seq 120); do
  sacctmgr -i -n list cluster >/dev/null 2>&1 && break
  running "$dir/run/slurmdbd.pid" || { log "slurmdbd stopped: $(tail -1 "$dir/log/slurmdbd.log")"; exit 1; }
  sleep 0.5
done
if [ -z "$(sacctmgr -n -P list cluster "$cluster" format=cluster)" ]; then
  sacctmgr -i add cluster "$cluster" >/dev/null
fi
if ! running "$dir/run/slurmctld.pid"; then
  log "starting slurmctld"
  slurmctld
fi
if ! running "$dir/run/slurmd.pid"; then
  log "starting slurmd"
  slurmd
fi
for _ in $(seq 120); do
  state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
  case "$state" in idle*|mixed*|allocated*) break ;; esac
  sleep 0.5
done
case "$state" in
  idle*|mixed*|allocated*) ;;
  down*|drain*) scontrol update nodename="$host" state=resume ;;
  *) log "node $host is '$state'; see $dir/log"; exit 1 ;;
esac

log "ready in $(echo "$(date +%s.%N) - $start" | bc) s"
echo "export SLURM_CONF=$dir/slurm.conf"
echo "export CLEARHOUSE_TEST_SLURM=1"
echo "export CLEARHOUSE_SLURM_CLUSTER=$cluster"
