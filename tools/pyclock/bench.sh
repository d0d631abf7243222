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
# Wall time is what the issue's goal speaks of; CPU time (user + system of the child,
# from getrusage, to the microsecond) moves far less on a shared machine, so both are
# given, with the load average before and after.
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

python3 - "$runs" "$work/market.json" "$bin" <<'PY'
import os, resource, statistics, subprocess, sys, time

runs, market, binary = int(sys.argv[1]), sys.argv[2], sys.argv[3]
commands = {
    "clearhouse auction solve": [binary, "auction", "solve", "--no-final-round", "--in", "-", "--out", "-"],
    "python3 clock.py": [sys.executable, "tools/pyclock/clock.py"],
}

def run(cmd):
    """One whole process: wall seconds and the child's CPU seconds (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(market, "rb") as stdin:
        subprocess.run(cmd, stdin=stdin, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

print("load average before: %.2f %.2f %.2f" % os.getloadavg())
times = {name: [] for name in commands}
for _ in range(runs):  # alternately, so both meet the same load
    for name, cmd in commands.items():
        times[name].append(run(cmd))
print("load average after:  %.2f %.2f %.2f" % os.getloadavg())
print(f"{runs} runs of each; median (range) in seconds")
med = {}
for name, ts in times.items():
    walls, cpus = [w for w, _ in ts], [c for _, c in ts]
    med[name] = statistics.median(walls), statistics.median(cpus)
    print(f"  {name:26} wall {med[name][0]:.3f} ({min(walls):.3f}-{max(walls):.3f})"
          f"  cpu {med[name][1]:.3f} ({min(cpus):.3f}-{max(cpus):.3f})")
(gw, gc), (pw, pc) = med.values()
print(f"python / go: wall {pw / gw:.1f}x, cpu {pc / gc:.1f}x (issue 33's goal: 50x)")
PY
