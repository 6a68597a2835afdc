#!/usr/bin/env bash
# The worker-only build (-DBENCHFLEET_WORKER_ONLY=ON, docs/gpu.md) configures with
# nothing but LibTorch and the two header-only libraries: ZeroMQ, SQLite, date and
# GoogleTest are made unfindable, and the build it generates has the worker (and the GPU
# calibration tool where the CUDA Toolkit is) and none of the daemons.
#
#   worker_only_configure_test.sh SOURCE_DIR
set -euo pipefail
source_dir=$1
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
log="$build/configure.log"
if ! cmake -S "$source_dir" -B "$build/tree" -DBENCHFLEET_WORKER_ONLY=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_cppzmq=ON -DCMAKE_DISABLE_FIND_PACKAGE_SQLite3=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_date=ON -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON >"$log" 2>&1; then
  cat "$log" >&2
  echo "worker-only configure failed" >&2
  exit 1
fi
fail() { cat "$log" >&2; echo "worker-only configure: $*" >&2; exit 1; }
grep -q "GoogleTest not found; the worker's tests are not built" "$log" || fail "no word on the tests"
grep -q "benchfleet: LibTorch .* at " "$log" || fail "does not say which LibTorch it found"
for line in "LibTorch CUDA:" "cuDNN:" "NCCL:"; do
  grep -q "benchfleet: $line" "$log" || fail "does not say which $line it found"
done
targets=$(cmake --build "$build/tree" --target help)
grep -q "benchfleet-worker" <<<"$targets" || fail "no benchfleet-worker target"
for daemon in benchfleet-coordinator benchfleet-agent benchfleet worker_test; do
  if grep -qE "(^|[ .])$daemon(:|$| )" <<<"$targets"; then fail "builds $daemon too"; fi
done
if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  grep -q "benchfleet-gpu-calibrate" <<<"$targets" || fail "no benchfleet-gpu-calibrate where the CUDA Toolkit is"
fi
echo "worker-only configure: ok"
