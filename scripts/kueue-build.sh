#!/usr/bin/env bash
# Builds Kueue's controller (sigs.k8s.io/kueue/cmd/kueue at the version pinned in
# tools/kueue/go.mod, whose CRDs scripts/kube-up.sh installs) into a cache directory, and
# does nothing when the binary is already there. Prints the directory.
#
#   KUEUE_BIN        where the binary goes
#                    (default ${XDG_CACHE_HOME:-$HOME/.cache}/clearhouse/kueue-v0.17.0/bin)
#   KUEUE_REBUILD=1  build even when the binary is present
#
# A cold build takes about 4 minutes of CPU (more on a busy machine).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version=v0.17.0
bin="${KUEUE_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/clearhouse/kueue-$version/bin}"

if [ -x "$bin/kueue" ] && [ "${KUEUE_REBUILD:-0}" != 1 ]; then
  echo "$bin"
  exit 0
fi
cd "$root/tools/kueue"
pinned="$(go list -m -f '{{.Version}}' sigs.k8s.io/kueue)"
[ "$pinned" = "$version" ] || { echo "kueue-build: tools/kueue pins sigs.k8s.io/kueue $pinned, this script $version" >&2; exit 1; }

mkdir -p "$bin"
start=$(date +%s)
echo "kueue-build: building sigs.k8s.io/kueue/cmd/kueue $version into $bin (cold: ~4 min of CPU)" >&2
# Build into a temporary directory first so that an interrupted build never leaves a
# half-written binary that the next run would take as done.
tmp="$(mktemp -d "$bin/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 nice -n "${KUBE_NICE:-5}" go build -trimpath \
  -ldflags "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$version -X sigs.k8s.io/kueue/pkg/version.BuildDate=1970-01-01T00:00:00Z" \
  -o "$tmp/" sigs.k8s.io/kueue/cmd/kueue
mv -f "$tmp/kueue" "$bin/kueue"
echo "kueue-build: done in $(( $(date +%s) - start ))s" >&2
echo "$bin"
