#!/usr/bin/env bash
# Shows that with standalone Asio no turnloop header includes anything under
# boost/: compiles every public header, and turnloop's compiled unit, with
# TURNLOOP_STANDALONE_ASIO against the standalone Asio in $1, in both build
# modes, with the compiler ($2, default g++) listing every header it opens
# (-H), and fails on the first that is Boost's. Boost stays installed on the
# machine (the tests' harness is Boost.Test), so that list is the proof.
#
#   test/boost_free.sh bin/asio-standalone-1.38.2/include [clang++-16]
set -uo pipefail
cd "$(dirname "$0")/.."
asio=${1:?usage: test/boost_free.sh <standalone Asio include dir> [compiler]}
cxx=${2:-g++}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

{
  echo '#include <turnloop.hpp>'
  for header in include/turnloop/*.hpp; do
    # src.hpp is the compiled unit's, checked below.
    [ "${header##*/}" = src.hpp ] || echo "#include <turnloop/${header##*/}>"
  done
} >"$work/all.cpp"

status=0
check() {
  local name=$1; shift
  if ! "$cxx" -std=c++20 -DTURNLOOP_STANDALONE_ASIO -Iinclude -I"$asio" -H \
      -fsyntax-only "$@" 2>"$work/$name.log"; then
    echo "$name: does not compile"
    grep -m 10 'error:' "$work/$name.log"
    status=1
  elif grep -E '^\.+ .*boost/' "$work/$name.log" | head -5 | grep .; then
    echo "$name: includes Boost (above)"
    status=1
  else
    echo "$name: $(grep -c '^\.' "$work/$name.log") headers opened, none of Boost's"
  fi
}
check headers "$work/all.cpp"
check headers_header_only -DTURNLOOP_HEADER_ONLY "$work/all.cpp"
check compiled_unit src/turnloop.cpp
exit $status
