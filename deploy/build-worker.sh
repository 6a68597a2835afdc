#!/usr/bin/env bash
# Builds benchfleet-worker alone (-DBENCHFLEET_WORKER_ONLY=ON) against another LibTorch,
# for an agent that carries several workers (`benchfleet-agent --worker A --worker B`, the
# `torch` axis of schemas/sweep.md).
#
#   deploy/build-worker.sh legacy            Debian's LibTorch 1.13 (deploy/install-legacy-torch.sh
#                                            unpacks it) into build-torch1.13/
#   deploy/build-worker.sh BUILD_DIR PYTHON  the torch of a venv's python (its
#                                            torch.utils.cmake_prefix_path)
#   deploy/build-worker.sh BUILD_DIR PREFIX  a LibTorch whose TorchConfig.cmake is under PREFIX
#
# Prints the worker's path last. Takes the same ccache as the main build.
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/ccache-env.sh
source deploy/torch.env
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
if [[ ${1:-} == legacy ]]; then
  build_dir=${BENCHFLEET_LEGACY_BUILD_DIR:-build-torch1.13}
  torch=$BENCHFLEET_LEGACY_TORCH_DIR/usr/lib/$arch/cmake
  [[ -d $torch/Torch ]] || { echo "build-worker: no LibTorch in $torch; run deploy/install-legacy-torch.sh" >&2; exit 1; }
else
  build_dir=${1:?usage: deploy/build-worker.sh legacy | BUILD_DIR PYTHON_OR_PREFIX}
  torch=${2:?usage: deploy/build-worker.sh BUILD_DIR PYTHON_OR_PREFIX}
fi
python=()
prefix=()
if [[ -f $torch && -x $torch ]]; then
  python=(-DBENCHFLEET_TORCH_PYTHON="$torch")
else
  python=(-DBENCHFLEET_TORCH_PYTHON=)
  prefix=(-DCMAKE_PREFIX_PATH="$torch")
fi
# The GPU calibration tool and the worker's tests come with the main build. The main
# build's -O2 without its -g: GCC makes the same code with or without debug information,
# which for a file of LibTorch's templates costs compile time and disk.
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBENCHFLEET_WORKER_ONLY=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" \
  -DBENCHFLEET_BUILD_TESTS=OFF -DBENCHFLEET_BUILD_GPU_TOOLS=OFF "${python[@]}" "${prefix[@]}" \
  -DBENCHFLEET_GLOO_INCLUDE_DIR=/usr/include >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target benchfleet-worker
realpath "$build_dir/worker/benchfleet-worker"
