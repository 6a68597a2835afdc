#!/usr/bin/env bash
# Configures and builds benchfleet into ./build (or $BENCHFLEET_BUILD_DIR).
#
# usage: deploy/build.sh [--programs] [CMAKE_CONFIGURE_ARGS...]
#   (default)   every target, the test suite included (deploy/test.sh)
#   --programs  only what `cmake --install` installs: benchfleet-coordinator,
#               benchfleet-agent, benchfleet-worker and benchfleet (and
#               benchfleet-gpu-calibrate where the CUDA Toolkit is found); the tests are
#               not even configured (deploy/quickstart.sh, a fleet host's install)
# Each mode sets BENCHFLEET_BUILD_TESTS itself, so a build directory one mode configured
# serves the other.
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/ccache-env.sh
build_dir=${BENCHFLEET_BUILD_DIR:-build}
if [[ ${1:-} == --programs ]]; then
  shift
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBENCHFLEET_BUILD_TESTS=OFF "$@"
  targets=(benchfleet-coordinator benchfleet-agent benchfleet-worker benchfleet)
  # Installed when built (worker/host/CMakeLists.txt): `cmake --install` needs it then.
  if grep -qiE '^BENCHFLEET_BUILD_GPU_TOOLS:BOOL=(ON|TRUE|YES|1)$' "$build_dir/CMakeCache.txt"; then
    targets+=(benchfleet-gpu-calibrate)
  fi
  cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}"
else
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBENCHFLEET_BUILD_TESTS=ON "$@"
  cmake --build "$build_dir" -j "$(nproc)"
fi
