#!/usr/bin/env bash
# Builds the coordinator, agent, CLI and their tests with AddressSanitizer and
# UndefinedBehaviorSanitizer and runs the unit and fault tests against them. The LibTorch
# worker is not sanitized: the tests use the one from ./build (the fault tests use the
# result worker, built here). The end-to-end tests
# (labelled `integration`: whole sweeps through real workers) run once, in the normal
# stage; here they would spend most of their time in the unsanitized worker, so they are
# not even built (BENCHFLEET_END_TO_END_TESTS=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/ccache-env.sh
worker=$(pwd)/${BENCHFLEET_BUILD_DIR:-build}/worker/benchfleet-worker
[[ -x $worker ]] || { echo "sanitize: build the worker first (deploy/build.sh)" >&2; exit 1; }
build_dir=${BENCHFLEET_SANITIZE_BUILD_DIR:-build-asan}
# -O1 and line tables only (-g1): what ASan needs to run at a reasonable speed and to
# name file and line in its reports. At the release build's -O2 -g a file took 1.6-2.1
# times as long to compile here, and this build is neither measured nor shipped.
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBENCHFLEET_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DBENCHFLEET_BUILD_WORKER=OFF -DBENCHFLEET_WORKER_PATH="$worker" \
  -DBENCHFLEET_END_TO_END_TESTS=OFF >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
# A sanitizer report ends the process with an error: the test that started it fails.
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The unit tests two at a time, the fault tests (deadlines on real clocks, floods of
# hostile messages, a saturated coordinator) one at a time: two of them sharing the
# cores under the sanitizers' cost were seen to fail their deadlines.
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j 2 -LE 'integration|fault' "$@"
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -L fault "$@"
