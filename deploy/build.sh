#!/usr/bin/env bash
# Configures and builds benchfleet into ./build (or $BENCHFLEET_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/ccache-env.sh
build_dir=${BENCHFLEET_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build "$build_dir" -j "$(nproc)"
