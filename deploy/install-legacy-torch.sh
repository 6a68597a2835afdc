#!/usr/bin/env bash
# Makes Debian 12's LibTorch 1.13.1 available for a second, worker-only build
# (deploy/build-worker.sh), the older side of the `torch` axis in the tests: its runtime
# (libtorch1.13, versioned libraries only) installed as a package, its development files
# (libtorch-dev: headers, CMake config, the unversioned libtorch*.so links) unpacked into
# BENCHFLEET_LEGACY_TORCH_DIR (deploy/torch.env says why not into /usr). Idempotent. Needs
# root (or sudo) and Debian's package lists.
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/torch.env
fail() { echo "install-legacy-torch: $*" >&2; exit 1; }
sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)

# libtorch-dev's own dependencies (the headers it includes), and the BLAS 1.13 runs with:
# libtorch pulls the reference BLAS by default; OpenBLAS is ~30x faster for GEMM, and its
# OpenMP build is made the system's BLAS below.
packages=(libtorch1.13 libgflags-dev libgoogle-glog-dev libprotobuf-dev python3-dev libgloo-dev
          libopenblas0-openmp libopenblas0-pthread libopenblas-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-legacy-torch: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# OpenBLAS's OpenMP build as libblas.so.3, liblapack.so.3 and libopenblas.so.0 (Debian
# prefers the pthread one): ATen, oneDNN and OpenBLAS then share OpenMP's one pool of
# threads, instead of OpenBLAS's own pool computing on the cores where OpenMP's idle
# threads spin (an mlp at batch 64 on 2 threads: 2.38 ms with the pthread build, 1.20
# with the OpenMP one; bench/README.md, One pool of threads). A user's Debian PyTorch on
# this host runs with the same library. (The wheel's LibTorch has MKL inside.)
for name in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
  target=/usr/lib/$arch/openblas-openmp/$name
  if [[ $(readlink -f "/usr/lib/$arch/$name") != "$(readlink -f "$target")" ]]; then
    echo "install-legacy-torch: $name -> $target"
    "${sudo_cmd[@]}" update-alternatives --quiet --set "$name-$arch" "$target"
  fi
done

dir=$BENCHFLEET_LEGACY_TORCH_DIR
config=$dir/usr/lib/$arch/cmake/Torch/TorchConfigVersion.cmake
runtime=$(dpkg-query -W -f='${Version}' libtorch1.13)
if [[ -f $dir/VERSION && $(cat "$dir/VERSION") == "$runtime" && -f $config ]]; then
  echo "install-legacy-torch: LibTorch $runtime (Debian) in $dir"
  exit 0
fi
debs=$(mktemp -d)
trap 'rm -rf "$debs"' EXIT
chmod 755 "$debs"  # apt downloads as its own user
(cd "$debs" && apt-get -o APT::Sandbox::User=root download "libtorch-dev=$runtime" >/dev/null) ||
  fail "apt-get download libtorch-dev=$runtime failed (run apt-get update?)"
scratch=$dir.partial
"${sudo_cmd[@]}" rm -rf "$scratch"
"${sudo_cmd[@]}" mkdir -p "$scratch"
"${sudo_cmd[@]}" dpkg -x "$debs"/libtorch-dev_*.deb "$scratch" || fail "dpkg -x libtorch-dev failed"
# The unversioned links point at lib*.so.1.13 beside them, which the runtime package put
# in /usr/lib/<arch>: point them there. (Caffe2's test and detectron libraries come in
# packages of their own, which nothing here needs: their links go.)
for link in "$scratch/usr/lib/$arch"/*.so; do
  [[ -L $link ]] || continue
  target=/usr/lib/$arch/$(readlink "$link")
  if [[ -e $target ]]; then
    "${sudo_cmd[@]}" ln -sfn "$target" "$link"
  else
    "${sudo_cmd[@]}" rm -f "$link"
  fi
done
# Caffe2's CMake targets name the runtime's files themselves (libc10.so.1.13.0) beside
# the config: each is linked to where the package put it.
dpkg-query -L libtorch1.13 | grep -E "^/usr/lib/$arch/lib[^/]*\.so\.[0-9.]+$" | while read -r lib; do
  "${sudo_cmd[@]}" ln -sfn "$lib" "$scratch$lib"
done
# TorchConfig.cmake looks for the libraries in <prefix>/lib, not lib/<arch> (Debian's own
# copy finds them there only through the system's default paths).
for link in "$scratch/usr/lib/$arch"/*.so; do
  "${sudo_cmd[@]}" ln -sfn "$(readlink "$link")" "$scratch/usr/lib/$(basename "$link")"
done
for lib in libtorch libtorch_cpu libc10; do
  [[ -e $scratch/usr/lib/$arch/$lib.so ]] || fail "$lib.so: libtorch1.13 did not install what libtorch-dev links to"
done
echo "$runtime" | "${sudo_cmd[@]}" tee "$scratch/VERSION" >/dev/null
"${sudo_cmd[@]}" rm -rf "$dir"
"${sudo_cmd[@]}" mv "$scratch" "$dir"
echo "install-legacy-torch: LibTorch $runtime (Debian's libtorch-dev, unpacked) in $dir"
