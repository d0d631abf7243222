#!/usr/bin/env bash
# slurm-down.sh: stop the Slurm daemons scripts/slurm-up.sh started (slurmd, slurmctld,
# slurmdbd, by their pid files). munged and MariaDB stay: other programs may use them.
# With --purge it also removes the state directory and drops the accounting database, so
# the next slurm-up starts from nothing.
set -euo pipefail
dir=${CLEARHOUSE_SLURM_DIR:-/tmp/clearhouse-slurm}
db=${CLEARHOUSE_SLURM_DB:-clearhouse_slurm_acct}
for d in slurmd slurmctld slurmdbd; do
  pid="$dir/run/$d.pid"
  p=$(cat "$pid" 2>/dev/null || true)
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill "$p"
    for _ in $(seq 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
    echo "slurm-down: stopped $d" >&2
  fi
  rm -f "$pid"
done
if [ "${1:-}" = --purge ]; then
  rm -rf "$dir"
  mysql -uroot -h127.0.0.1 -e "DROP DATABASE IF EXISTS $db" 2>/dev/null || true
  echo "slurm-down: removed $dir and database $db" >&2
fi
