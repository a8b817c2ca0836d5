#!/usr/bin/env bash
# turnloop's side-by-side benchmarks: installs what is missing, builds the
# benchmark programs (release, b2), runs them and prints the report.
#
#   bench/run.sh [--quick|--full] [--only <workloads>] [--asio <version>]
#                [--compiler clang|clang-libc++] [--reactor select|asio-io-uring]
#                [--windows]
#   bench/run.sh --callgrind <workloads> [--asio <version>]
#   bench/run.sh --group [--runs N] [--only keepalive,churn,placement]
#                                     the loop_group HTTP comparisons
#
# --asio 1.83|1.87|1.89|1.90|1.38.2 builds and runs every side against that
# Boost.Asio (from ../shared/asio, unpacked by .ci/asio-headers) in front of
# Debian's Boost 1.81, and --asio standalone-<version> (1.26.0 to 1.38.2,
# ../shared/asio-standalone) on standalone Asio, so the ratios can be seen
# on the Asio a user has; --compiler on clang-16, with its libstdc++ or with
# libc++; --reactor on Asio's select reactor (BOOST_ASIO_DISABLE_EPOLL, the
# stand-in for every reactor without epoll) or its io_uring backend (Asio
# 1.28 or newer: with --asio), every side alike; --windows cross-builds the
# posts, timers and TCP with MinGW-w64 (Asio's IOCP context) and runs them
# under Wine (test/wine.sh), io_context and turnloop on the same build:
# Wine's figures are not Windows figures.
#
# Results (JSON with every run, an SVG chart) go to bench/results/.
# doc/benchmarks.md describes the method and every workload.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

.ci/install-deps

asio=()
compiler=()
reactor=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --asio) asio=("asio=${args[i + 1]:-}") ;;
    --asio=*) asio=("asio=${args[i]#--asio=}") ;;
    --compiler|--compiler=*)
      name=${args[i]#--compiler=}
      [ "$name" != --compiler ] || name=${args[i + 1]:-}
      case $name in
        clang) compiler=(toolset=clang-16) ;;
        clang-libc++) compiler=(toolset=clang-16 stdlib=libc++) ;;
        *) echo "bench/run.sh: --compiler takes clang or clang-libc++" >&2; exit 2 ;;
      esac ;;
    --reactor|--reactor=*)
      name=${args[i]#--reactor=}
      [ "$name" != --reactor ] || name=${args[i + 1]:-}
      case $name in
        select|asio-io-uring) reactor=("reactor=$name") ;;
        *) echo "bench/run.sh: --reactor takes select or asio-io-uring" >&2; exit 2 ;;
      esac ;;
    --windows) reactor=(target-os=windows) ;;
  esac
done
if [ "${reactor[*]}" = target-os=windows ]; then
  test/wine.sh --init
fi
if [ ${#asio[@]} -ne 0 ]; then
  .ci/asio-headers "${asio[0]#asio=}" >/dev/null
fi

mkdir -p bench/results
echo "building the benchmarks (b2 -j2 bench ${asio[*]} ${compiler[*]} ${reactor[*]}, release)..." >&2
if ! b2 -j2 bench "${asio[@]}" "${compiler[@]}" "${reactor[@]}" > bench/results/build.log 2>&1; then
  tail -n 40 bench/results/build.log >&2
  echo "build failed; full log: bench/results/build.log" >&2
  exit 1
fi

exec python3 bench/run.py "$@"
