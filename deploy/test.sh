#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's start time, so a slow run shows where its minutes went.
phase() { echo "== test.sh $(date -u +%H:%M:%S) $*"; }
phase install
deploy/install-deps.sh
# Debian's LibTorch 1.13 beside the wheel's: a second worker, built alone, for the tests of
# an agent that carries two LibTorch versions (the torch axis: tests/torch_axis_test.cc).
deploy/install-legacy-torch.sh
phase build-legacy-worker
legacy_worker=$(deploy/build-worker.sh legacy | tail -n 1)
phase build
deploy/build.sh -DBENCHFLEET_SECOND_WORKER="$legacy_worker"
build_dir=${BENCHFLEET_BUILD_DIR:-build}
# Daemon tests are heavy on a 2-core machine; they run one at a time.
phase ctest
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 "$@"
# The daemons again under AddressSanitizer + UndefinedBehaviorSanitizer: unit, integration
# and fault tests (the LibTorch worker is the one built above).
phase sanitize
deploy/sanitize.sh
# A short fuzzing run over the message decoder, the sweep parser and the coordinator's
# handlers (docs/reliability.md, Fuzzing, has the long one).
phase fuzz
deploy/fuzz.sh "${BENCHFLEET_FUZZ_RUNS:-50000}"
phase done
