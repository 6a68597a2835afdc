#!/usr/bin/env bash
# Installs every build and run-time dependency of benchfleet from Debian's packages.
# Idempotent: packages already present are left as they are. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ccache pkg-config
  libtorch-dev libgloo-dev
  # libtorch pulls the reference BLAS by default; OpenBLAS is ~30x faster for GEMM. Its
  # OpenMP build is made the system's BLAS below.
  libopenblas0-openmp libopenblas0-pthread libopenblas-dev
  cppzmq-dev libzmq3-dev libsodium-dev
  libsqlite3-dev sqlite3
  # the coordinator's allocator (coordinator/CMakeLists.txt)
  libjemalloc-dev
  # the coordinator's --metrics HTTP endpoint (coordinator/metrics/)
  libcpp-httplib-dev
  libcli11-dev nlohmann-json3-dev
  # IANA time zones of schedules
  libhowardhinnant-date-dev
  libgtest-dev libgmock-dev
  # the fuzz targets (libFuzzer) and the sanitizer builds
  clang libclang-rt-14-dev
  # ip netns and veth pairs: the cross-host gang test (tests/netns_gang_test.sh)
  iproute2
  # headless rendering of `benchfleet report` pages (tests/report_test.cc)
  chromium
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi

# OpenBLAS's OpenMP build as libblas.so.3, liblapack.so.3 and libopenblas.so.0 (Debian
# prefers the pthread one): ATen, oneDNN and OpenBLAS then share OpenMP's one pool of
# threads, instead of OpenBLAS's own pool computing on the cores where OpenMP's idle
# threads spin (an mlp at batch 64 on 2 threads: 2.38 ms with the pthread build, 1.20
# with the OpenMP one; bench/README.md, One pool of threads). A user's PyTorch on this
# host runs with the same library.
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
for name in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
  target=/usr/lib/$arch/openblas-openmp/$name
  if [[ $(readlink -f "/usr/lib/$arch/$name") != "$(readlink -f "$target")" ]]; then
    echo "install-deps: $name -> $target"
    "${sudo_cmd[@]}" update-alternatives --quiet --set "$name-$arch" "$target"
  fi
done
