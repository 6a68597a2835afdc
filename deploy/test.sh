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
# Each phase's start time, so a slow run shows where its minutes went; summary() lists
# their durations at the end.
phases=()
phase() {
  echo "== test.sh $(date -u +%H:%M:%S) $*"
  phases+=("$(date +%s) $*")
}
summary() {
  local i start name next
  echo "== test.sh phases (minutes):"
  for ((i = 0; i + 1 < ${#phases[@]}; ++i)); do
    read -r start name <<<"${phases[i]}"
    read -r next _ <<<"${phases[i + 1]}"
    awk -v s="$((next - start))" -v n="$name" 'BEGIN {printf "  %6.1f  %s\n", s / 60, n}'
  done
  read -r start _ <<<"${phases[0]}"
  read -r next _ <<<"${phases[${#phases[@]} - 1]}"
  awk -v s="$((next - start))" 'BEGIN {printf "  %6.1f  in all\n", s / 60}'
}
# The ten slowest tests of a ctest run (its cost file: name, runs, seconds of the last).
slowest() {
  local dir costs found=()
  for dir in "$@"; do
    costs=$dir/Testing/Temporary/CTestCostData.txt
    [[ -f $costs ]] && found+=("$costs")
  done
  ((${#found[@]})) || return 0
  echo "== the ten slowest tests in $*:"
  # awk reads the whole sorted list (head would close the pipe early, and sort, killed by
  # SIGPIPE on a list longer than a pipe's buffer, would fail the run under pipefail).
  for costs in "${found[@]}"; do
    sed '/^---/,$d' "$costs" | awk -v d="$(dirname "$(dirname "$(dirname "$costs")")")" \
      '{print $1, $2, $3, d}'
  done | sort -k3 -g -r | awk 'NR <= 10 {printf "  %8.1f s  %s (%s)\n", $3, $1, $4}'
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
  phase done
  summary
  slowest "$build_dir"
  exit 0
fi
# Debian's LibTorch 1.13 beside the wheel's: a second worker, built alone, for the tests of
# an agent that carries two LibTorch versions (the torch axis: tests/torch_axis_test.cc).
deploy/install-legacy-torch.sh
phase build-legacy-worker
legacy_worker=$(deploy/build-worker.sh legacy | tail -n 1)
phase build
deploy/build.sh -DBENCHFLEET_SECOND_WORKER="$legacy_worker"
# The unit and end-to-end tests, two at a time, except those that measure (thread
# scaling, induced slowdowns, latency bounds: registered SERIAL, so RUN_SERIAL): each of
# those has the 2 cores to itself. The fault tests (label fault) run once, in the
# sanitizer stage below, against the sanitized daemons.
phase ctest
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j 2 -LE fault "$@"
# The daemons again under AddressSanitizer + UndefinedBehaviorSanitizer: unit and fault
# tests (the LibTorch worker is the one built above; the end-to-end tests ran above).
phase sanitize
deploy/sanitize.sh
# A short fuzzing run over the message decoder, the sweep parser and the coordinator's
# handlers (docs/reliability.md, Fuzzing, has the long one).
phase fuzz
deploy/fuzz.sh "${BENCHFLEET_FUZZ_RUNS:-50000}"
phase done
summary
slowest "$build_dir" "${BENCHFLEET_SANITIZE_BUILD_DIR:-build-asan}"
