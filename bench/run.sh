#!/usr/bin/env bash
# turnloop's side-by-side benchmarks: installs what is missing, builds the
# benchmark programs (release, b2), runs them and prints the report.
#
#   bench/run.sh [--quick|--full] [--only <workloads>]
#   bench/run.sh --callgrind <workloads>
#
# Results (JSON with every run, an SVG chart) go to bench/results/.
# doc/benchmarks.md describes the method and every workload.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

.ci/install-deps

mkdir -p bench/results
echo "building the benchmarks (b2 -j2 bench, release)..." >&2
if ! b2 -j2 bench > bench/results/build.log 2>&1; then
  tail -n 40 bench/results/build.log >&2
  echo "build failed; full log: bench/results/build.log" >&2
  exit 1
fi

exec python3 bench/run.py "$@"
