#!/usr/bin/env bash
# Times `clearhouse auction solve` against the plain-Python reference clock, each as a
# whole process (start-up, reading the JSON, the clock, writing the result), on the
# generated 10,000 x 1,000 market, and prints the medians and their ratio. The engine
# runs with the final round off: the reference is the clock alone. Both read the
# instance from standard input and write the result to /dev/null.
#
#   tools/pyclock/bench.sh [RUNS]        # RUNS of each, alternately (default 5)
#
# CLEARHOUSE=path uses a built binary; otherwise it builds one as `make build` does.
# Wall time is what the issue's goal speaks of; CPU time (user + system) moves far less
# on a shared machine, so both are given, with the load average before and after.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-5}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bin="${CLEARHOUSE:-}"
if [ -z "$bin" ]; then
  bin="$work/clearhouse"
  go build -o "$bin" ./cmd/clearhouse
fi
"$bin" auction gen --seed 2 --clusters 100 --resources 10 --bidders 10000 --out "$work/market.json"

# measure NAME CMD...: one run's wall and CPU seconds, appended to $work/NAME.
measure() {
  local name="$1"
  shift
  /usr/bin/time -f '%e %U %S' -a -o "$work/$name" "$@" <"$work/market.json" >/dev/null
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$runs"); do
  measure go "$bin" auction solve --no-final-round --in - --out -
  measure python python3 tools/pyclock/clock.py
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"

# median FILE COLUMN-EXPRESSION: the median over the runs of wall ($1) or CPU ($2+$3).
median() {
  awk "{print $2}" "$work/$1" | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'
}
gw=$(median go '$1') gc=$(median go '$2+$3') pw=$(median python '$1') pc=$(median python '$2+$3')
echo "runs: $runs of each; medians in seconds"
printf '%-28s wall %6.3f  cpu %6.3f\n' "clearhouse auction solve" "$gw" "$gc" "python3 clock.py" "$pw" "$pc"
awk -v gw="$gw" -v gc="$gc" -v pw="$pw" -v pc="$pc" \
  'BEGIN {printf "python / go: wall %.1fx  cpu %.1fx  (goal of issue 33: 50x)\n", pw/gw, (gc > 0 ? pc/gc : 0)}'
