#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite with ctest.
#
# usage: deploy/test.sh [--quick] [CTEST_ARGS...]
#   --quick  the unit tests only (no fleets, no measurements, no sanitizer build, no
#            fuzzing; the second worker is not built): the edit-test loop. CI runs the
#            whole command.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [[ ${1:-} == --quick ]]; then
  quick=1
  shift
fi
# Each phase's start time, so a slow run shows where its minutes went.
phase() { echo "== test.sh $(date -u +%H:%M:%S) $*"; }
# The ten slowest tests of a ctest run (its cost file: name, runs, seconds of the last).
slowest() {
  local costs=$1/Testing/Temporary/CTestCostData.txt
  [[ -f $costs ]] || return 0
  echo "== the ten slowest tests in $1:"
  # awk reads the whole sorted list (head would close the pipe early, and sort, killed by
  # SIGPIPE on a list longer than a pipe's buffer, would fail the run under pipefail).
  sed '/^---/,$d' "$costs" | sort -k3 -g -r | awk 'NR <= 10 {printf "  %8.1f s  %s\n", $3, $1}'
}
phase install
deploy/install-deps.sh
build_dir=${BENCHFLEET_BUILD_DIR:-build}
timed_labels='integration|fault|engine'
if ((quick)); then
  phase build
  deploy/build.sh
  phase ctest-unit
  ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j 2 -LE "$timed_labels" "$@"
  slowest "$build_dir"
  phase done
  exit 0
fi
# Debian's LibTorch 1.13 beside the wheel's: a second worker, built alone, for the tests of
# an agent that carries two LibTorch versions (the torch axis: tests/torch_axis_test.cc).
deploy/install-legacy-torch.sh
phase build-legacy-worker
legacy_worker=$(deploy/build-worker.sh legacy | tail -n 1)
phase build
deploy/build.sh -DBENCHFLEET_SECOND_WORKER="$legacy_worker"
# The unit tests two at a time; the tests that start fleets or measure (labelled
# integration and engine: thread scaling, induced slowdowns) need the 2 cores to
# themselves and run one at a time. The fault tests (label fault) run once, in the
# sanitizer stage below, against the sanitized daemons.
phase ctest-unit
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j 2 -LE "$timed_labels" "$@"
phase ctest-fleet
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -L 'integration|engine' "$@"
slowest "$build_dir"
# The daemons again under AddressSanitizer + UndefinedBehaviorSanitizer: unit and fault
# tests (the LibTorch worker is the one built above; the end-to-end tests ran above).
phase sanitize
deploy/sanitize.sh
slowest "${BENCHFLEET_SANITIZE_BUILD_DIR:-build-asan}"
# A short fuzzing run over the message decoder, the sweep parser and the coordinator's
# handlers (docs/reliability.md, Fuzzing, has the long one).
phase fuzz
deploy/fuzz.sh "${BENCHFLEET_FUZZ_RUNS:-50000}"
phase done
