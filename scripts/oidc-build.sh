#!/usr/bin/env bash
# Builds the sign-in tests' OpenID Provider (tools/oidc: the example provider of
# github.com/zitadel/oidc/v3 at the version pinned in tools/oidc/go.mod) into a cache
# directory, and does nothing when the binary is already there. Prints its path.
#
#   OIDC_BIN   where the binary goes
#              (default ${XDG_CACHE_HOME:-$HOME/.cache}/clearhouse/oidc-<version>/bin)
#   OIDC_REBUILD=1  build even when the binary is present
#
# A cold build takes about a minute on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="$(awk '$1 == "require" && $2 == "github.com/zitadel/oidc/v3" {print $3}' "$root/tools/oidc/go.mod")"
# The source's hash too, so that a change to tools/oidc/main.go makes a new binary.
sum="$(cat "$root/tools/oidc/main.go" "$root/tools/oidc/go.sum" | sha256sum | cut -c1-12)"
bin="${OIDC_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/clearhouse/oidc-$version-$sum/bin}"
if [ -x "$bin/oidc-provider" ] && [ "${OIDC_REBUILD:-0}" != 1 ]; then
  echo "$bin/oidc-provider"
  exit 0
fi
mkdir -p "$bin"
echo "oidc-build: building the OpenID Provider (zitadel/oidc $version) into $bin" >&2
cd "$root/tools/oidc"
# Build beside the target and rename, so an interrupted build never leaves a
# half-written binary that the next run would take as done.
tmp="$(mktemp "$bin/.oidc-provider.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$tmp" .
mv -f "$tmp" "$bin/oidc-provider"
echo "$bin/oidc-provider"
