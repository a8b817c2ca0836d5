#!/usr/bin/env bash
# Builds and runs a small consumer project (test/consumer/) each way a user
# puts turnloop into a build:
#   find_package      turnloop configured, built and installed with CMake
#                     into a temporary prefix; the consumer finds it there
#                     with find_package(turnloop CONFIG REQUIRED);
#   add_subdirectory  the consumer adds this checkout with add_subdirectory;
#   FetchContent      the consumer fetches this repository's HEAD commit
#                     with FetchContent (so uncommitted changes are not in
#                     it);
#   pkg-config        a plain g++ line with the installed turnloop.pc.
# Each way builds the consumer twice, linking the compiled library and
# header-only, and runs both. Prints one line per way, then
# "N passed, N failed"; exits non-zero if a way failed. Logs go to
# bin/consumers/.
#
#   test/consumers.sh              Boost's own Asio
#   test/consumers.sh /path/include
#                                  a newer Asio's headers in front of
#                                  Boost's (TURNLOOP_ASIO_INCLUDE_DIR)
#   test/consumers.sh --standalone /path/include
#                                  standalone Asio (TURNLOOP_STANDALONE_ASIO):
#                                  each consumer build also lists the
#                                  headers it opens (-H), and fails if one is
#                                  Boost's
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

standalone=no
if [ "${1:-}" = --standalone ]; then
  standalone=yes
  shift
fi
asio_dir=${1:-}
cmake_asio=()
consumer_flags=()
if [ "$standalone" = yes ] && [ -z "$asio_dir" ]; then
  echo "consumers: --standalone needs standalone Asio's include directory"
  echo "0 passed, 1 failed"
  exit 1
fi
if [ -n "$asio_dir" ]; then
  asio_dir=$(realpath "$asio_dir")
  if [ "$standalone" = yes ]; then
    header=asio/version.hpp
  else
    header=boost/asio/version.hpp
  fi
  if [ ! -f "$asio_dir/$header" ]; then
    echo "consumers: no $header under $asio_dir"
    echo "0 passed, 1 failed"
    exit 1
  fi
fi

jobs=$(nproc)
work=$(mktemp -d "${TMPDIR:-/tmp}/turnloop-consumers.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
if [ -n "$asio_dir" ]; then
  # An installed turnloop refers to its Asio by path, so the headers must
  # live outside the checkout (CMakeLists.txt refuses otherwise).
  cp -r "$asio_dir" "$work/asio"
  cmake_asio=(-DTURNLOOP_ASIO_INCLUDE_DIR="$work/asio")
fi
if [ "$standalone" = yes ]; then
  cmake_asio+=(-DTURNLOOP_STANDALONE_ASIO=ON)
  consumer_flags=(-H)
fi

# Runs "$@" with its output in file $1; on failure shows the end of it.
logged() {
  local log=$1; shift
  "$@" >"$log" 2>&1 || { tail -30 "$log"; return 1; }
}

# On standalone Asio: fails if log $1, of a build with -H, opened a header
# of Boost's.
boost_free() {
  [ "$standalone" = yes ] || return 0
  if grep -E '^\.+ .*boost/' "$1" | head -3 | grep .; then
    echo "the consumer's build opened Boost's headers (above)"
    return 1
  fi
  echo "the consumer's build opened $(grep -c '^\.' "$1") headers, none of Boost's"
}
logs=$root/bin/consumers
mkdir -p "$logs"
rm -f "$logs"/*.log

passed=0
failed=0
failures=()

# Runs the consumer's programs in $1 (a directory), appending to log $2.
run_programs() {
  local dir=$1 log=$2 program
  for program in consumer consumer_header_only; do
    if ! timeout 60 "$dir/$program" >>"$log" 2>&1; then
      echo "$program failed" >>"$log"
      return 1
    fi
  done
}

# One way: runs the function way_$1, logging to bin/consumers/$1.log, and
# prints its line.
way() {
  local name=$1 start=$SECONDS log="$logs/$1.log" status
  if "way_$name" "$log" >>"$log" 2>&1; then
    passed=$((passed + 1)); status="1 passed   0 failed"
  else
    failed=$((failed + 1)); failures+=("consumer/$name"); status="0 passed   1 failed"
  fi
  printf '%-8s %-28s    %s  (%ds)\n' consumer "$name" "$status" $((SECONDS - start))
  grep '^consumer (' "$log" | sed 's/^/    /'
  if [ "$status" != "1 passed   0 failed" ]; then
    tail -20 "$log" | sed 's/^/    /'
  fi
}

install_ok=0
install_turnloop() {
  cmake -S "$root" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$prefix" -DTURNLOOP_BUILD_TESTS=OFF \
      -DTURNLOOP_BUILD_EXAMPLES=OFF "${cmake_asio[@]}" \
    && cmake --build "$work/build" -j"$jobs" \
    && cmake --install "$work/build"
}
# Not a case of its own: find_package and pkg-config fail without it.
start=$SECONDS
if install_turnloop >"$logs/install.log" 2>&1; then
  install_ok=1
  status="done"
else
  status="FAILED, see bin/consumers/install.log"
fi
printf '%-8s %-28s    %s  (%ds)\n' consumer "cmake install (prefix)" "$status" \
  $((SECONDS - start))

way_find_package() {
  [ "$install_ok" = 1 ] || { echo "install failed, see install.log"; return 1; }
  cmake -S test/consumer -B "$work/find_package" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_FLAGS="${consumer_flags[*]}" \
    && grep -q "^turnloop_DIR:PATH=$prefix/" "$work/find_package/CMakeCache.txt" \
    && logged "$work/find_package.log" cmake --build "$work/find_package" -j"$jobs" \
    && boost_free "$work/find_package.log" \
    && run_programs "$work/find_package" "$1"
}

way_add_subdirectory() {
  cmake -S test/consumer -B "$work/add_subdirectory" -DCMAKE_BUILD_TYPE=Release \
      -DTURNLOOP_SOURCE_DIR="$root" "${cmake_asio[@]}" \
      -DCMAKE_CXX_FLAGS="${consumer_flags[*]}" \
    && logged "$work/add_subdirectory.log" cmake --build "$work/add_subdirectory" -j"$jobs" \
    && boost_free "$work/add_subdirectory.log" \
    && run_programs "$work/add_subdirectory" "$1"
}

way_FetchContent() {
  local head
  head=$(git rev-parse HEAD) || return 1
  if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "note: uncommitted changes are not in the fetched commit $head"
  fi
  cmake -S test/consumer -B "$work/FetchContent" -DCMAKE_BUILD_TYPE=Release \
      -DTURNLOOP_GIT_REPOSITORY="$root" -DTURNLOOP_GIT_TAG="$head" \
      "${cmake_asio[@]}" -DCMAKE_CXX_FLAGS="${consumer_flags[*]}" \
    && logged "$work/FetchContent.log" cmake --build "$work/FetchContent" -j"$jobs" \
    && boost_free "$work/FetchContent.log" \
    && run_programs "$work/FetchContent" "$1"
}

way_pkg_config() {
  [ "$install_ok" = 1 ] || { echo "install failed, see install.log"; return 1; }
  local pc out=$work/pkg_config
  pc=$(find "$prefix" -name turnloop.pc | head -1)
  [ -n "$pc" ] || { echo "no turnloop.pc under $prefix"; return 1; }
  export PKG_CONFIG_PATH=${pc%/*}
  mkdir -p "$out"
  local compiled=(g++ -std=c++20 -O2 test/consumer/main.cpp -o "$out/consumer"
    $(pkg-config --cflags --libs turnloop) "${consumer_flags[@]}")
  local header_only=(g++ -std=c++20 -O2 -DTURNLOOP_HEADER_ONLY
    test/consumer/main.cpp -o "$out/consumer_header_only"
    $(pkg-config --cflags turnloop) -pthread "${consumer_flags[@]}")
  echo "${compiled[*]}" && logged "$out/compiled.log" "${compiled[@]}" \
    && boost_free "$out/compiled.log" \
    && echo "${header_only[*]}" \
    && logged "$out/header_only.log" "${header_only[@]}" \
    && boost_free "$out/header_only.log" \
    && run_programs "$out" "$1"
}

way find_package
way add_subdirectory
way FetchContent
way pkg_config

if [ ${#failures[@]} -ne 0 ]; then
  echo "failures: ${failures[*]} (logs in bin/consumers/)"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
