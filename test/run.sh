#!/usr/bin/env bash
# Builds and runs turnloop's whole test suite:
#   1. every module, optimised (variant=release);
#   2. every module under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the cases labelled "threads" under ThreadSanitizer;
#   4. every program in example/ (each runs to completion and exits 0);
#   5. every module and every example again, release, against each newer
#      Boost.Asio in ../shared/asio/ (.ci/asio-headers unpacks them; b2
#      asio=<version> puts them in front of Debian's Boost), with a line per
#      version saying how many passed;
#   6. the benchmark suite's quick mode once, to prove it still works (a
#      benchmark is not a test: only its own checks of the work done count).
# Installs what is missing first (.ci/install-deps). Ends with one line,
# "N passed, N failed", counting test cases over every run; exits non-zero
# if anything failed.
#
#   test/run.sh                 everything
#   test/run.sh loop loop_io    only these modules (and no benchmark)
#   TURNLOOP_ASIO_VERSIONS="1.87 1.90" test/run.sh   only these newer Asios
#   TURNLOOP_ASIO_VERSIONS=none test/run.sh          Debian's Asio only
set -uo pipefail
cd "$(dirname "$0")/.."

.ci/install-deps || { echo "0 passed, 1 failed"; exit 1; }

jobs=$(nproc)
modules=("$@")
modules_given=("$@")
if [ ${#modules[@]} -eq 0 ]; then
  for source in test/*.cpp; do
    name=$(basename "$source" .cpp)
    [ "$name" = asio ] || modules+=("$name")
  done
fi

passed=0
failed=0
failures=()

# One module run: parses Boost.Test's XML report; a crash or a missing report
# counts as one failed case.
run_module() {
  local variant=$1 module=$2; shift 2
  local binary="stage/test/$variant/$module"
  local report
  if [ ! -x "$binary" ]; then
    failed=$((failed + 1)); failures+=("$variant/$module (not built)")
    return
  fi
  report=$(mktemp)
  local start=$SECONDS
  timeout 900 "$binary" --report_format=XML --report_level=short \
    --report_sink="$report" --log_level=error "$@" >"$report.log" 2>&1
  local status=$?
  local ok bad
  ok=$(grep -o 'test_cases_passed="[0-9]*"' "$report" | head -1 | grep -o '[0-9]*')
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
  printf '%-16s %-28s %4d passed %3d failed  (%ds)\n' \
    "$variant" "$module" "$ok" "$bad" $((SECONDS - start))
  if [ "$bad" -ne 0 ]; then
    failures+=("$variant/$module")
    sed 's/^/    /' "$report.log" | tail -40
  fi
  rm -f "$report" "$report.log"
}

build() {
  local variant=$1
  echo "building tests ($variant)..."
  if ! b2 -j"$jobs" -q test variant="$variant" >"bin/build-$variant.log" 2>&1; then
    grep -E "error|failed" "bin/build-$variant.log" | head -40
    echo "build failed (variant=$variant), see bin/build-$variant.log"
    return 1
  fi
}

mkdir -p bin
for variant in release asan tsan; do
  if ! build "$variant"; then
    failed=$((failed + 1)); failures+=("build $variant")
    continue
  fi
  for module in "${modules[@]}"; do
    if [ "$variant" = tsan ]; then
      # Only modules with cases labelled "threads" run under TSan.
      labels=$("stage/test/tsan/$module" --list_labels 2>&1)
      grep -qw threads <<<"$labels" || continue
      TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
        run_module tsan "$module" --run_test=@threads
    elif [ "$variant" = asan ]; then
      ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1" \
      UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
        run_module asan "$module"
    else
      run_module release "$module"
    fi
  done
done

# Examples: each is a self-checking program; one case each. $1 is the
# directory they are staged in, $2 the label of their lines.
run_examples() {
  local dir=$1 label=$2
  for source in example/*.cpp; do
    name=$(basename "$source" .cpp)
    start=$SECONDS
    if timeout 120 "$dir/$name" --once >"bin/example-$name.log" 2>&1; then
      passed=$((passed + 1)); status="1 passed   0 failed"
    else
      failed=$((failed + 1)); failures+=("$label/$name"); status="0 passed   1 failed"
      sed 's/^/    /' "bin/example-$name.log" | tail -20
    fi
    printf '%-16s %-28s    %s  (%ds)\n' "$label" "$name" "$status" $((SECONDS - start))
  done
}

echo "building examples..."
if b2 -j"$jobs" -q example >bin/build-examples.log 2>&1; then
  run_examples stage/example example
else
  grep -E "error|failed" bin/build-examples.log | head -40
  failed=$((failed + 1)); failures+=("build examples")
fi

# Asio's version as its header spells it, e.g. 1.34.0.
asio_version_in() {
  local v
  v=$(sed -n 's|^#define BOOST_ASIO_VERSION \([0-9]*\).*|\1|p' "$1/boost/asio/version.hpp")
  echo "$((v / 100000)).$((v / 100 % 1000)).$((v % 100))"
}
summaries=("Asio $(asio_version_in /usr/include) (Debian's Boost 1.81; release, sanitizers, examples): $passed passed, $failed failed")

# Every module and example against each newer Asio, release only.
versions=${TURNLOOP_ASIO_VERSIONS:-}
if [ "$versions" != none ]; then
  if ! versions=$(.ci/asio-headers $versions); then
    failed=$((failed + 1)); failures+=("asio headers")
    versions=
  fi
fi
[ "$versions" = none ] && versions=
for version in $versions; do
  label="release-asio-$version"
  asio_version=$(asio_version_in "bin/asio-$version/include")
  before_passed=$passed before_failed=$failed
  echo "building tests and examples against Boost $version's Asio ($asio_version)..."
  if ! b2 -j"$jobs" -q test example asio="$version" >"bin/build-$label.log" 2>&1; then
    grep -E "error|failed" "bin/build-$label.log" | head -40
    echo "build failed (asio=$version), see bin/build-$label.log"
    failed=$((failed + 1)); failures+=("build $label")
  else
    for module in "${modules[@]}"; do
      run_module "$label" "$module"
    done
    run_examples "stage/example-asio-$version" "example-$version"
  fi
  summaries+=("Asio $asio_version (asio=$version): $((passed - before_passed)) passed, $((failed - before_failed)) failed")
done

# The benchmarks' quick mode: one case.
if [ ${#modules_given[@]} -eq 0 ]; then
  start=$SECONDS
  if bench/run.sh --quick >bin/bench-quick.log 2>&1; then
    passed=$((passed + 1)); status="1 passed   0 failed"
  else
    failed=$((failed + 1)); failures+=("bench --quick"); status="0 passed   1 failed"
    tail -30 bin/bench-quick.log | sed 's/^/    /'
  fi
  printf '%-16s %-28s    %s  (%ds)\n' bench "run.sh --quick" "$status" $((SECONDS - start))
fi

for summary in "${summaries[@]}"; do
  echo "$summary"
done
if [ ${#failures[@]} -ne 0 ]; then
  echo "failures: ${failures[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
