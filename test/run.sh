#!/usr/bin/env bash
# Builds and runs turnloop's whole test suite:
#   1. every module, optimised (variant=release);
#   2. every module under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the cases labelled "threads" under ThreadSanitizer;
#   4. every program in example/ (each runs to completion and exits 0);
#   5. every public header alone, compiled and header-only (b2 headers), and
#      the programs built from them; and the include direction of detail/
#      and impl/ (test/include_direction.py, one case);
#   6. the consumer builds: CMake find_package, add_subdirectory,
#      FetchContent, and pkg-config (test/consumers.sh);
#   7. the benchmark suite's quick mode once, to prove it still works (a
#      benchmark is not a test: only its own checks of the work done count);
# That is the reference line: g++, Debian's Boost 1.81 (Asio 1.26), epoll.
# Then the other lines of the matrix (the table above add_line's calls):
# each puts a few dimensions together (a compiler, an Asio flavour and
# version, a reactor), so that every one is built and run somewhere:
#   8. Boost.Asio 1.38.2 (the newest), and the versions between 1.26 and it
#      in ../shared/asio/ (.ci/asio-headers unpacks them; b2 asio=<version>
#      puts them in front of Debian's Boost);
#   9. standalone Asio (../shared/asio-standalone/, b2
#      asio=standalone-<version>): the oldest and the newest in full, with
#      the check that no turnloop header includes Boost, and the consumer
#      builds; the versions between, compiled;
#  10. Asio's select reactor (b2 reactor=select, BOOST_ASIO_DISABLE_EPOLL),
#      the stand-in for kqueue, /dev/poll and select, release and
#      ASan+UBSan; and Asio's io_uring backend (b2 reactor=asio-io-uring);
#      a case that tests what only epoll does is skipped there and listed
#      as not applicable, with its reason;
#  11. clang-16 with libstdc++, and with libc++ (b2 toolset=clang-16
#      [stdlib=libc++]);
#  12. Windows: every module and example cross-built with MinGW-w64
#      (b2 target-os=windows, Asio's IOCP context) and run under Wine
#      (test/wine.sh, one prefix in bin/wine-prefix), after the Linux
#      lines; a case that tests what only Linux has is listed as not
#      applicable, with its reason.
# Installs what is missing first (.ci/install-deps). A build runs while the
# previous build's programs run (see run_stages), and builds only what runs:
# the modules named, and under TSan only those with "threads" cases. Ends
# with the time each phase took, a line per line of the matrix and one
# line, "N passed, N failed", counting test cases over every run; exits
# non-zero if anything failed.
#
#   test/run.sh                     everything
#   test/run.sh loop loop_io        only these modules (no benchmark)
#   test/run.sh headers consumers   only the header and consumer builds
#   TURNLOOP_LINES="select asio-io-uring" test/run.sh
#                                   the reference line and only these lines
#                                   (none: the reference line alone)
#   TURNLOOP_BUILD_NICE=0 test/run.sh    builds not niced (a shared machine)
set -uo pipefail
cd "$(dirname "$0")/.."

.ci/install-deps || { echo "0 passed, 1 failed"; exit 1; }

jobs=$(nproc)
modules=()
extras=()
for name in "$@"; do
  case $name in
    headers|consumers) extras+=("$name") ;;
    *) modules+=("$name") ;;
  esac
done
everything=$([ $# -eq 0 ] && echo yes || echo no)
if [ "$everything" = yes ]; then
  for source in test/*.cpp; do
    name=$(basename "$source" .cpp)
    # Not modules: the tests' flavour switch and the Boost.Test library
    # built for libc++ and Windows.
    case $name in asio|boost_test_library) continue ;; esac
    modules+=("$name")
  done
  extras=(headers consumers)
fi

passed=0
failed=0
failures=()

# Where the time goes: wall and CPU seconds (user+sys of every process the
# phase ran, gcc included) per phase, printed before the summary. CPU seconds
# are the stable number on a shared machine; wall time is what CI waits for.
suite_start=$EPOCHREALTIME
phase_names=()
declare -A phase_wall=() phase_cpu=()
module_times=()
timing=$(mktemp -d)
build_pid=
# A build in the background (see run_stages) does not see the Ctrl-C or
# kill that stops the script: stop it and its b2 (two subshells down),
# which stops its compilers.
descendants() {
  local child
  for child in $(cat "/proc/$1/task/"*/children 2>/dev/null); do
    echo "$child"
    descendants "$child"
  done
}
stop_build() {
  [ -n "$build_pid" ] || return 0
  kill $(descendants "$build_pid") "$build_pid" 2>/dev/null
}
trap 'stop_build; rm -rf "$timing"' EXIT
trap 'exit 130' INT TERM

# Runs "$@" in a subshell that writes, when it ends, the CPU its descendants
# used (bash's `times`, second line) and the time it ended (third line) to
# $1; keeps the command's status.
measured() {
  local cpu_file=$1; shift
  ( "$@"; status=$?; times >"$cpu_file"; echo "$EPOCHREALTIME" >>"$cpu_file"; exit $status )
}

# CPU seconds in a file `times` wrote.
cpu_in() {
  awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/);
    n += t[1] * 60 + t[2] } printf "%.1f", n }' "$1" 2>/dev/null || echo 0
}

# Adds the wall seconds from $2 (an $EPOCHREALTIME) to the end time in file
# $3 (now, for a command still running) and the CPU in that file to phase $1.
add_phase() {
  local name=$1 since=$2 cpu end
  cpu=$(cpu_in "$3")
  end=$(sed -n 3p "$3" 2>/dev/null)
  end=${end:-$EPOCHREALTIME}
  [ -n "${phase_wall[$name]+set}" ] || { phase_names+=("$name"); phase_wall[$name]=0; phase_cpu[$name]=0; }
  phase_wall[$name]=$(awk -v a="${phase_wall[$name]}" -v s="$since" -v e="$end" \
    'BEGIN { printf "%.1f", a + e - s }')
  phase_cpu[$name]=$(awk -v a="${phase_cpu[$name]}" -v c="$cpu" 'BEGIN { printf "%.1f", a + c }')
}

print_timing() {
  local name total
  echo "timing (seconds; cpu = user+sys of the phase's processes):"
  for name in "${phase_names[@]}"; do
    printf '  %-58s wall %7s  cpu %7s\n' "$name" "${phase_wall[$name]}" "${phase_cpu[$name]}"
  done
  total=$(awk -v s="$suite_start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.0f", e - s }')
  echo "  whole run: wall ${total}s"
  if [ ${#module_times[@]} -ne 0 ]; then
    echo "slowest module runs (wall, cpu):"
    printf '%s\n' "${module_times[@]}" | sort -k2,2 -g -r | head -12 \
      | awk '{ printf "  %-48s %7ss %7ss\n", $1, $2, $3 }'
  fi
}

# How the programs of the line being run are started: directly, or (the
# Windows line, see runs_line) through test/wine.sh, with ".exe" names.
runner=() exe=

# One module run: parses Boost.Test's XML report; a crash or a missing report
# counts as one failed case. $1 is the directory under stage/test.
run_module() {
  local variant=$1 module=$2; shift 2
  local binary="stage/test/$variant/$module$exe"
  local report
  if [ ! -x "$binary" ]; then
    failed=$((failed + 1)); failures+=("$variant/$module (not built)")
    printf '%-18s %-28s    0 passed   1 failed  (not built)\n' "$variant" "$module"
    return
  fi
  report=$(mktemp)
  local start=$SECONDS since=$EPOCHREALTIME
  # test_suite level: a case skipped where it does not apply (test::only_where)
  # is logged with its reason.
  measured "$report.cpu" timeout 900 "${runner[@]}" "$binary" --report_format=XML --report_level=short \
    --report_sink="$report" --log_level=test_suite --color_output=no "$@" \
    >"$report.log" 2>&1
  local status=$?
  add_phase "run $variant" "$since" "$report.cpu"
  module_times+=("$variant/$module $(awk -v s="$since" -v e="$EPOCHREALTIME" \
    'BEGIN { printf "%.1f", e - s }') $(cpu_in "$report.cpu")")
  local ok bad skipped
  ok=$(grep -o 'test_cases_passed="[0-9]*"' "$report" | head -1 | grep -o '[0-9]*')
  # Not applicable: the cases test::only_where skipped, with their reasons
  # (not those a --run_test filter left out, which the report also counts
  # as skipped).
  skipped=$(grep -c 'is skipped because precondition failed' "$report.log")
  bad=$(grep -o 'test_cases_failed="[0-9]*"' "$report" | head -1 | grep -o '[0-9]*')
  aborted=$(grep -o 'test_cases_aborted="[0-9]*"' "$report" | head -1 | grep -o '[0-9]*')
  if [ -z "$ok" ]; then
    ok=0; bad=1; aborted=0
  fi
  bad=$((bad + aborted))
  if [ "$status" -ne 0 ] && [ "$bad" -eq 0 ]; then
    bad=1
  fi
  passed=$((passed + ok))
  failed=$((failed + bad))
  not_applicable=$((not_applicable + ${skipped:-0}))
  printf '%-18s %-28s %4d passed %3d failed  (%ds)%s\n' \
    "$variant" "$module" "$ok" "$bad" $((SECONDS - start)) \
    "$([ "${skipped:-0}" -eq 0 ] || echo "  $skipped not applicable:")"
  grep -o 'Test case ".*" is skipped because precondition failed: .*' \
      "$report.log" | sed 's/^Test case \("[^"]*"\) is skipped because precondition failed: /    \1 /'
  if [ "$bad" -ne 0 ]; then
    failures+=("$variant/$module")
    grep -v 'Entering test \|Leaving test \|is skipped because' "$report.log" \
      | sed 's/^/    /' | tail -40
  fi
  rm -f "$report" "$report.log" "$report.cpu"
}

# One self-checking program (an example, a header build's program): one
# case, passed if it exits 0 within two minutes.
run_program() {
  local label=$1 binary=$2; shift 2
  local name start status since=$EPOCHREALTIME
  name=$(basename "$binary")
  start=$SECONDS
  if measured "$timing/program" timeout 120 "${runner[@]}" "$binary$exe" "$@" >"bin/$label-$name.log" 2>&1; then
    passed=$((passed + 1)); status="1 passed   0 failed"
  else
    failed=$((failed + 1)); failures+=("$label/$name"); status="0 passed   1 failed"
    sed 's/^/    /' "bin/$label-$name.log" | tail -20
  fi
  printf '%-18s %-28s    %s  (%ds)\n' "$label" "$name" "$status" $((SECONDS - start))
  add_phase "run $label" "$since" "$timing/program"
}

# The builds run one at a time, in the background and niced, while the
# previous build's programs run in the foreground: a run mostly waits (on
# sockets, timers, other threads) and a build is CPU, so together they keep
# both cores busy. Niced, a build takes only the CPU the tests leave, so the
# tests see about the load they would alone; but it also yields to anyone
# else's builds on a shared machine (there TURNLOOP_BUILD_NICE=0). A stage is one b2 build and the
# runs of what it built; stage i+1's build starts when stage i's ends, before
# stage i's runs. Output stays in order: a stage prints its runs' lines after
# the previous stage's.
stage_what=() stage_log=() stage_targets=() stage_runs=() stage_group=()

# add_stage <what> <log> <targets command> <runs command> <group>: the
# commands are word-split; the targets command sets b2's arguments in
# `targets` (none: no build) when the build starts, so that it can look at
# earlier stages' results. Group names the Asio whose summary line the
# stage counts in.
add_stage() {
  stage_what+=("$1"); stage_log+=("$2"); stage_targets+=("$3")
  stage_runs+=("$4"); stage_group+=("$5")
}

targets=()
build_since=()
start_build() {
  local i=$1
  build_pid=
  targets=()
  ${stage_targets[i]}
  [ ${#targets[@]} -ne 0 ] || return 0
  echo "building ${stage_what[i]}..."
  measured "$timing/build-$i" nice -n "${TURNLOOP_BUILD_NICE:-10}" b2 -j"$jobs" -q "${targets[@]}" \
    >"${stage_log[i]}" 2>&1 &
  build_pid=$!
  build_since[i]=$EPOCHREALTIME
}

# Waits for stage $1's build; a failed build is one failed case.
finish_build() {
  local i=$1 status
  [ -n "$build_pid" ] || return 0
  wait "$build_pid"
  status=$?
  build_pid=
  add_phase "build ${stage_what[i]}" "${build_since[i]}" "$timing/build-$i"
  # Now as well as in the table at the end, for a run that does not end.
  echo "built ${stage_what[i]}: wall ${phase_wall[build ${stage_what[i]}]}s, cpu ${phase_cpu[build ${stage_what[i]}]}s"
  if [ "$status" -ne 0 ]; then
    grep -E "error|failed|don.t know how|can.t find" "${stage_log[i]}" | head -40
    echo "build failed (${stage_what[i]}), see ${stage_log[i]}"
    failed=$((failed + 1)); failures+=("build ${stage_what[i]}")
    return 1
  fi
}

summaries=()
group_passed=0 group_failed=0
declare -A group_label=()
# The summary line of the stages of group $1 since the last summary.
not_applicable=0 group_not_applicable=0
summarise() {
  local na=$((not_applicable - group_not_applicable))
  summaries+=("${group_label[$1]}: $((passed - group_passed)) passed, $((failed - group_failed)) failed$([ "$na" -eq 0 ] || echo ", $na not applicable (listed above)")")
  group_passed=$passed group_failed=$failed group_not_applicable=$not_applicable
}

run_stages() {
  local i n=${#stage_what[@]} group=${stage_group[0]:-} built
  [ "$n" -ne 0 ] || return 0
  start_build 0
  for ((i = 0; i < n; i++)); do
    if [ "${stage_group[i]}" != "$group" ]; then
      summarise "$group"
      group=${stage_group[i]}
    fi
    finish_build "$i" && built=yes || built=no
    [ $((i + 1)) -eq "$n" ] || start_build $((i + 1))
    [ "$built" = no ] || ${stage_runs[i]}
  done
  summarise "$group"
}

# Every example; on standalone Asio ($3 = standalone) the Beast one is not
# built, and says so (Beast is built on Boost.Asio).
run_examples() {
  local dir=$1 label=$2 flavour=${3:-boost} name
  for source in example/*.cpp; do
    name=$(basename "$source" .cpp)
    if [ "$flavour" = standalone ] && [ "$name" = group_http_server ]; then
      printf '%-18s %-28s    not built: Boost.Beast needs Boost.Asio\n' "$label" "$name"
      continue
    fi
    run_program "$label" "$dir/$name" --once
  done
}

run_headers() {
  local dir=$1 label=$2
  for name in headers_compiled headers_header_only two_units; do
    run_program "$label" "$dir/$name"
  done
}

wants() {
  [[ " ${extras[*]} " =~ " $1 " ]]
}

# Adds the b2 targets for modules $@ to `targets`: the whole suite, or one
# install target each.
module_targets() {
  local module
  if [ "$everything" = yes ] && [ "$#" -eq "${#modules[@]}" ]; then
    targets+=(test)
  else
    for module in "$@"; do
      targets+=("test//stage-$module")
    done
  fi
}

# The modules with cases labelled "threads", the only ones TSan runs (and
# builds). The release binaries list their labels; a module whose release
# binary is missing counts as labelled, so that TSan still builds it.
tsan_modules=()
find_tsan_modules() {
  local module labels
  tsan_modules=()
  for module in "${modules[@]}"; do
    if [ -x "stage/test/release/$module" ]; then
      labels=$("stage/test/release/$module" --list_labels 2>&1)
      grep -qw threads <<<"$labels" || continue
    fi
    tsan_modules+=("$module")
  done
}

targets_release() { module_targets "${modules[@]}"; targets+=(variant=release); }
targets_asan() { module_targets "${modules[@]}"; targets+=(variant=asan); }
targets_tsan() {
  find_tsan_modules
  [ ${#tsan_modules[@]} -eq 0 ] \
    || { module_targets "${tsan_modules[@]}"; targets+=(variant=tsan); }
}
targets_examples() { targets=(example); }
targets_headers() { targets=(headers); }
targets_none() { :; }
targets_bench() { targets=(bench); }
# A line of the matrix other than the reference (see add_line): its
# modules, examples and header builds, release, with its b2 properties.
targets_line() {
  local i=$1
  if [ "${line_scope[i]}" = compile ]; then
    ! wants headers || targets+=(test/headers//stage-header-only)
  else
    if [ ${#modules[@]} -ne 0 ]; then
      module_targets "${modules[@]}"
      [ "${line_scope[i]}" = tests ] || targets+=(example)
    fi
    [ "${line_scope[i]}" != full ] || ! wants headers || targets+=(headers)
  fi
  [ ${#targets[@]} -eq 0 ] || targets+=(variant=${line_variant[i]} ${line_properties[i]})
}

runs_release() {
  local module
  for module in "${modules[@]}"; do
    run_module release "$module"
  done
}
runs_asan() {
  local module
  for module in "${modules[@]}"; do
    ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
      run_module asan "$module"
  done
}
runs_tsan() {
  local module
  for module in "${tsan_modules[@]}"; do
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
      run_module tsan "$module" --run_test=@threads
  done
}
runs_examples() { run_examples stage/example example; }
runs_headers() {
  run_headers stage/headers headers
  run_program headers test/include_direction.py
}

# Consumer builds: find_package, add_subdirectory, FetchContent, pkg-config;
# one case each. Arguments go to test/consumers.sh (--standalone <dir>).
runs_consumers() {
  local since=$EPOCHREALTIME counts ok bad
  measured "$timing/consumers" test/consumers.sh "$@" | tee bin/consumers.log \
    | grep -v ' passed, .* failed$'
  add_phase "consumers (cmake builds and runs${1:+, standalone})" "$since" \
    "$timing/consumers"
  counts=$(tail -1 bin/consumers.log)
  ok=$(grep -o '^[0-9]*' <<<"$counts")
  bad=$(grep -o '[0-9]* failed$' <<<"$counts" | grep -o '[0-9]*')
  if [ -z "$ok" ] || [ -z "$bad" ]; then
    ok=0; bad=1
  fi
  passed=$((passed + ok)); failed=$((failed + bad))
  [ "$bad" -eq 0 ] || failures+=("consumers")
}

# The benchmarks' quick mode, one case; its stage built them, so its own b2
# call finds nothing to do.
runs_bench() {
  local start=$SECONDS since=$EPOCHREALTIME status
  if measured "$timing/bench" bench/run.sh --quick >bin/bench-quick.log 2>&1; then
    passed=$((passed + 1)); status="1 passed   0 failed"
  else
    failed=$((failed + 1)); failures+=("bench --quick"); status="0 passed   1 failed"
    tail -30 bin/bench-quick.log | sed 's/^/    /'
  fi
  printf '%-18s %-28s    %s  (%ds)\n' bench "run.sh --quick" "$status" $((SECONDS - start))
  add_phase "run bench --quick" "$since" "$timing/bench"
}

# What a line built runs: every module, example and header build, and on
# standalone Asio the check that no turnloop header includes Boost.
runs_line() {
  local i=$1
  local suffix=${line_suffix[i]} variant=${line_variant[i]} module
  if [ "${line_scope[i]}" = compile ]; then
    if wants headers; then
      run_program "headers$suffix" "stage/headers$suffix/headers_header_only"
      [ "${line_flavour[i]}" != standalone ] \
        || run_program "headers$suffix" test/boost_free.sh "${line_asio_dir[i]}" \
          ${line_compiler[i]}
    fi
    return
  fi
  if [ "${line_flavour[i]}" = windows ]; then
    runner=(test/wine.sh) exe=.exe
    local since=$EPOCHREALTIME
    measured "$timing/wine-init" test/wine.sh --init
    add_phase "run $variant$suffix" "$since" "$timing/wine-init"
  fi
  if [ ${#modules[@]} -ne 0 ]; then
    for module in "${modules[@]}"; do
      if [ "$variant" = asan ]; then
        ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1" \
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
          run_module "$variant$suffix" "$module"
      else
        run_module "$variant$suffix" "$module"
      fi
    done
    [ "${line_scope[i]}" = tests ] \
      || run_examples "stage/example$suffix" "example$suffix" "${line_flavour[i]}"
  fi
  runner=() exe=
  if [ "${line_scope[i]}" = full ] && wants headers; then
    run_headers "stage/headers$suffix" "headers$suffix"
    if [ "${line_flavour[i]}" = standalone ]; then
      run_program "headers$suffix" test/boost_free.sh "${line_asio_dir[i]}" \
        ${line_compiler[i]}
    fi
  fi
  if [ "${line_consumers[i]}" = yes ] && wants consumers; then
    runs_consumers --standalone "${line_asio_dir[i]}"
  fi
}

# Asio's version as its header spells it, e.g. 1.34.0, in include dir $1.
asio_version_in() {
  local v
  v=$(sed -n 's|^#define \(BOOST_\)\{0,1\}ASIO_VERSION \([0-9]*\).*|\2|p' \
    "$1/boost/asio/version.hpp" "$1/asio/version.hpp" 2>/dev/null | head -1)
  echo "$((v / 100000)).$((v / 100 % 1000)).$((v % 100))"
}

mkdir -p bin
group_label[reference]="g++ $(g++ -dumpversion), Asio $(asio_version_in /usr/include) (Debian's Boost 1.81), epoll"
if [ ${#modules[@]} -ne 0 ]; then
  for variant in release asan tsan; do
    add_stage "tests ($variant)" "bin/build-$variant.log" "targets_$variant" \
      "runs_$variant" reference
  done
  add_stage examples bin/build-examples.log targets_examples runs_examples reference
fi
! wants headers \
  || add_stage "header builds" bin/build-headers.log targets_headers runs_headers reference
! wants consumers \
  || add_stage consumers - targets_none runs_consumers reference
[ "$everything" = no ] \
  || add_stage benchmarks bin/build-bench.log targets_bench runs_bench reference

# The other lines: each one stage (one b2 build) and its summary line.
line_properties=() line_suffix=() line_scope=() line_flavour=()
line_asio_dir=() line_consumers=() line_compiler=() line_variant=()
# add_line <label> <b2 properties> <stage suffix>
#   <full|tests|programs|compile> <flavour> <asio include dir>
#   <consumers: yes|no> <compiler for checks> [<variant>, release]
#   [<group>, a line of its own]
# full: modules, examples and header builds; tests: the modules alone;
# programs: modules and examples; compile: the header-only header build
# alone (every public header in a unit of its own, with turnloop's bodies).
# Flavour boost, standalone or windows (run under Wine).
add_line() {
  local i=${#line_properties[@]} what group=${10:-line-${#line_properties[@]}}
  group_label[$group]=$1
  line_properties+=("$2"); line_suffix+=("$3"); line_scope+=("$4")
  line_flavour+=("$5"); line_asio_dir+=("$6"); line_consumers+=("$7")
  line_compiler+=("$8"); line_variant+=("${9:-release}")
  case $4 in
    full) what="tests, examples and header builds" ;;
    programs) what="tests and examples" ;;
    tests) what="tests (${9:-release})" ;;
    *) what="header-only header builds" ;;
  esac
  add_stage "$what, $1" "bin/build-line-$i.log" "targets_line $i" \
    "runs_line $i" "$group"
}

# The matrix's other lines. A dimension needs no line of its own: each line
# below puts a few together, so that every Asio flavour and version,
# compiler and reactor is built, and all but the versions between the
# oldest and the newest run the whole release suite somewhere. Release
# lines other than the reference build at -O1 (b2 optimization=minimal),
# which keeps the optimiser's own findings (g++'s -Wmaybe-uninitialized,
# clang's caching of a thread_local's address across a coroutine's
# suspension) for less compile time; -O3 and the sanitizers are the
# reference line's. Standalone 1.26.0 alone builds at -O0: with clang that
# halves a module's compile time (read_pooled.cpp: 11 against 24 CPU
# seconds), while standalone 1.38.2 keeps clang's -O1. With g++ -O0 saves
# almost nothing (the select line's build: 464 against 474 CPU seconds).
#
#   name                       compiler       Asio                  reactor   what
#   standalone-1.38.2          clang+libc++   standalone 1.38.2     epoll     full, Boost-free check, consumers, -O1
#   standalone-1.26.0          clang          standalone 1.26.0     epoll     full, Boost-free check, -O0
#   select                     g++            Boost.Asio 1.28.2     select    tests, examples, -O1
#   select-asan                g++            Boost.Asio 1.36.0     select    tests, ASan+UBSan
#   asio-io-uring              g++            Boost.Asio 1.38.0     io_uring  tests, examples (Asio's io_uring backend), -O1
#   boost-1.38.2, boost-1.87, standalone-1.28.2 standalone-1.30.2
#   standalone-1.34.2 standalone-1.36.0
#                              g++            the versions between  epoll     compiled: every header alone, header-only
#                                             and Boost.Asio 1.38.2
#   windows                    MinGW-w64 g++  Debian's Boost 1.81   IOCP      tests and examples, run under Wine, -O1
#
# The header builds (every public header alone, in both modes) run where
# what a header must include differs: on the reference line, with clang
# and libc++, and on standalone Asio; elsewhere the tests and examples
# compile the same headers.
#
# TURNLOOP_LINES picks lines by name (none: the reference line alone).
all_lines="standalone-1.38.2 standalone-1.26.0 select select-asan asio-io-uring boost-1.38.2 boost-1.87 standalone-1.28.2 standalone-1.30.2 standalone-1.34.2 standalone-1.36.0 windows"
lines=${TURNLOOP_LINES:-$all_lines}
[ "$lines" != none ] || lines=
# The Asio headers the lines need, unpacked first (.ci/asio-headers; a
# failure is counted after the stages).
wanted_headers=
for name in $lines; do
  case $name in
    standalone-*) wanted_headers+=" $name" ;;
    select) wanted_headers+=" 1.83" ;;
    select-asan) wanted_headers+=" 1.89" ;;
    asio-io-uring) wanted_headers+=" 1.90" ;;
    boost-*) wanted_headers+=" ${name#boost-}" ;;
  esac
done
if [ -n "$wanted_headers" ] && ! .ci/asio-headers $wanted_headers >/dev/null; then
  asio_headers_failed=yes
  lines=
fi
gxx="g++ $(g++ -dumpversion)" clang="clang $(clang++-16 -dumpversion)"
boost_label() { echo "Boost.Asio $(asio_version_in "bin/asio-$1/include") (asio=$1)"; }
standalone_label() { echo "standalone Asio $(asio_version_in "bin/asio-standalone-$1/include")"; }
o1=optimization=minimal o0=optimization=off
for name in $lines; do
  case $name in
    standalone-1.38.2)
      add_line "$clang + libc++, $(standalone_label 1.38.2), epoll, -O1" \
        "asio=standalone-1.38.2 toolset=clang-16 stdlib=libc++ $o1" \
        -asio-standalone-1.38.2-clang-libc++ full standalone \
        bin/asio-standalone-1.38.2/include yes clang++-16 ;;
    standalone-1.26.0)
      add_line "$clang + libstdc++, $(standalone_label 1.26.0), epoll, -O0" \
        "asio=standalone-1.26.0 toolset=clang-16 $o0" \
        -asio-standalone-1.26.0-clang full standalone \
        bin/asio-standalone-1.26.0/include no clang++-16 ;;
    select)
      add_line "$gxx, $(boost_label 1.83), select reactor (BOOST_ASIO_DISABLE_EPOLL), -O1" \
        "asio=1.83 reactor=select $o1" -asio-1.83-select programs boost \
        bin/asio-1.83/include no g++ ;;
    select-asan)
      add_line "$gxx, $(boost_label 1.89), select reactor (BOOST_ASIO_DISABLE_EPOLL), ASan+UBSan" \
        "asio=1.89 reactor=select" -asio-1.89-select tests boost \
        bin/asio-1.89/include no g++ asan ;;
    asio-io-uring)
      add_line "$gxx, $(boost_label 1.90), Asio's io_uring backend (BOOST_ASIO_HAS_IO_URING_AS_DEFAULT), -O1" \
        "asio=1.90 reactor=asio-io-uring $o1" -asio-1.90-asio-io-uring programs boost \
        bin/asio-1.90/include no g++ ;;
    windows)
      # Last: its build shares the machine with the Linux lines' runs.
      add_line "MinGW-w64 g++ $(x86_64-w64-mingw32-g++-posix -dumpversion 2>/dev/null), Asio $(asio_version_in /usr/include) (Debian's Boost 1.81), Windows (IOCP), run under Wine $(/usr/lib/wine/wine64 --version 2>/dev/null | sed 's/^wine-//'), -O1" \
        "target-os=windows $o1" -windows programs windows /usr/include no \
        x86_64-w64-mingw32-g++-posix ;;
    boost-*)
      version=${name#boost-}
      add_line "$gxx, $(boost_label "$version"), compiled" "asio=$version $o1" \
        "-asio-$version" compile boost "bin/asio-$version/include" no g++ ;;
    standalone-*)
      version=${name#standalone-}
      add_line "$gxx, $(standalone_label "$version"), compiled" \
        "asio=standalone-$version $o1" "-asio-standalone-$version" compile \
        standalone "bin/asio-standalone-$version/include" no g++ ;;
    *) echo "test/run.sh: unknown line $name (of: $all_lines)"
       failed=$((failed + 1)); failures+=("line $name") ;;
  esac
done

run_stages
# Counted after the stages, as before they ran together: in no Asio's line.
if [ "${asio_headers_failed:-}" = yes ]; then
  failed=$((failed + 1)); failures+=("asio headers")
fi

print_timing
for summary in "${summaries[@]}"; do
  echo "$summary"
done
if [ ${#failures[@]} -ne 0 ]; then
  echo "failures: ${failures[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
