#!/usr/bin/env bash
# Builds and runs turnloop's whole test suite:
#   1. every module, optimised (variant=release);
#   2. every module under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the cases labelled "threads" under ThreadSanitizer;
#   4. every program in example/ (each runs to completion and exits 0);
#   5. the benchmark suite's quick mode once, to prove it still works (a
#      benchmark is not a test: only its own checks of the work done count).
# Installs what is missing first (.ci/install-deps). Ends with one line,
# "N passed, N failed", counting test cases over the three runs; exits non-zero
# if anything failed.
#
#   test/run.sh                 everything
#   test/run.sh loop loop_io    only these modules
#   test/run.sh headers consumers   only the header builds (b2 headers) and
#                               the consumer builds (test/consumers.sh)
set -uo pipefail
cd "$(dirname "$0")/.."

.ci/install-deps || { echo "0 passed, 1 failed"; exit 1; }

jobs=$(nproc)
modules=()
modules_given=("$@")
extras=()
for name in "$@"; do
  case $name in
    headers|consumers) extras+=("$name") ;;
    *) modules+=("$name") ;;
  esac
done
if [ ${#modules_given[@]} -eq 0 ]; then
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
  printf '%-6s %-28s %4d passed %3d failed  (%ds)\n' \
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
  [ ${#modules[@]} -ne 0 ] || break # only headers or consumers named
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

# Examples: each is a self-checking program; one case each.
echo "building examples..."
if [ ${#modules[@]} -eq 0 ]; then
  echo "  skipped: only headers or consumers named"
elif b2 -j"$jobs" -q example >bin/build-examples.log 2>&1; then
  for source in example/*.cpp; do
    name=$(basename "$source" .cpp)
    start=$SECONDS
    if timeout 120 "stage/example/$name" --once >"bin/example-$name.log" 2>&1; then
      passed=$((passed + 1)); status="1 passed   0 failed"
    else
      failed=$((failed + 1)); failures+=("example/$name"); status="0 passed   1 failed"
      sed 's/^/    /' "bin/example-$name.log" | tail -20
    fi
    printf '%-6s %-28s    %s  (%ds)\n' example "$name" "$status" $((SECONDS - start))
  done
else
  grep -E "error|failed" bin/build-examples.log | head -40
  failed=$((failed + 1)); failures+=("build examples")
fi

# The benchmarks' quick mode: one case.
if [ ${#modules_given[@]} -eq 0 ]; then
  start=$SECONDS
  if bench/run.sh --quick >bin/bench-quick.log 2>&1; then
    passed=$((passed + 1)); status="1 passed   0 failed"
  else
    failed=$((failed + 1)); failures+=("bench --quick"); status="0 passed   1 failed"
    tail -30 bin/bench-quick.log | sed 's/^/    /'
  fi
  printf '%-6s %-28s    %s  (%ds)\n' bench "run.sh --quick" "$status" $((SECONDS - start))
fi

# Header builds and consumer builds (issue 11): a full run, or named.
wants() {
  [ ${#modules_given[@]} -eq 0 ] || [[ " ${extras[*]} " =~ " $1 " ]]
}

# Header builds: every public header alone, in both modes (b2 headers); the
# build is one case, and each of its self-checking programs one more.
if wants headers; then
  start=$SECONDS
  if b2 -j"$jobs" -q headers >bin/build-headers.log 2>&1; then
    passed=$((passed + 1)); status="1 passed   0 failed"
  else
    grep -E "error|failed" bin/build-headers.log | head -40
    failed=$((failed + 1)); failures+=("build headers"); status="0 passed   1 failed"
  fi
  printf '%-6s %-28s    %s  (%ds)\n' headers "b2 headers" "$status" $((SECONDS - start))
  for name in headers_compiled headers_header_only two_units; do
    start=$SECONDS
    if timeout 120 "stage/headers/$name" >"bin/headers-$name.log" 2>&1; then
      passed=$((passed + 1)); status="1 passed   0 failed"
    else
      failed=$((failed + 1)); failures+=("headers/$name"); status="0 passed   1 failed"
      sed 's/^/    /' "bin/headers-$name.log" | tail -20
    fi
    printf '%-6s %-28s    %s  (%ds)\n' headers "$name" "$status" $((SECONDS - start))
  done
fi

# Consumer builds: find_package, add_subdirectory, FetchContent, pkg-config;
# one case each.
if wants consumers; then
  test/consumers.sh | tee bin/consumers.log | grep -v ' passed, .* failed$'
  counts=$(tail -1 bin/consumers.log)
  ok=$(grep -o '^[0-9]*' <<<"$counts")
  bad=$(grep -o '[0-9]* failed$' <<<"$counts" | grep -o '[0-9]*')
  if [ -z "$ok" ] || [ -z "$bad" ]; then
    ok=0; bad=1
  fi
  passed=$((passed + ok)); failed=$((failed + bad))
  [ "$bad" -eq 0 ] || failures+=("consumers")
fi

if [ ${#failures[@]} -ne 0 ]; then
  echo "failures: ${failures[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
