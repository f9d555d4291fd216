#!/usr/bin/env bash
# crash_rounds.sh [ROUNDS] [BUILD_DIR]: the SIGKILL crash test (tests/integration/crash_test.cpp)
# for more rounds than the test suite's 20: gpuqd is killed at random moments under a stream of
# submits and cancels; after each restart every acknowledged job must be there exactly once, no
# acknowledged cancel undone, no node over capacity. Prints the rounds, the result and the time.
# BUILD_DIR is a build with tests (default: build, as scripts/test.sh makes it).
set -euo pipefail
rounds=${1:-200}
build=${2:-build}
test_bin="$build/tests/daemon_crash_test"
if [[ ! -x "$test_bin" ]]; then
  echo "crash_rounds.sh: $test_bin not found; build with tests first (scripts/test.sh or cmake --build $build)" >&2
  exit 2
fi
start=$(date +%s%N)
if GPUQ_CRASH_ROUNDS="$rounds" "$test_bin"; then result=passed; else result=FAILED; fi
ms=$((($(date +%s%N) - start) / 1000000))
printf 'crash_rounds: %d rounds %s in %d.%03d s\n' "$rounds" "$result" $((ms / 1000)) $((ms % 1000))
[[ $result == passed ]]
