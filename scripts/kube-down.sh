#!/usr/bin/env bash
# Stops the control plane scripts/kube-up.sh started (the processes named by the pid files
# in its state dir, and nothing else) and removes the state dir.
#   CLEARHOUSE_KUBE_STATE  state dir (default /tmp/clearhouse-kube)
set -euo pipefail
state="${CLEARHOUSE_KUBE_STATE:-/tmp/clearhouse-kube}"
[ -e "$state" ] || exit 0
if [ ! -e "$state/.clearhouse-kube" ]; then
  echo "kube-down: $state is not a state dir of kube-up.sh; leaving it alone" >&2
  exit 1
fi
# Stop in the reverse order of start, so the controllers do not log etcd's absence.
for name in kueue kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
  pidfile="$state/run/$name.pid"
  pid="$(cat "$pidfile" 2>/dev/null)" || continue
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || continue
  # Only a process started from this state dir's binaries (guards against pid reuse).
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$name" || continue
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
  echo "kube-down: stopped $name ($pid)" >&2
done
rm -rf "$state"
