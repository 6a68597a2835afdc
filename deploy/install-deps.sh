#!/usr/bin/env bash
# Installs every build and run-time dependency of benchfleet: Debian's packages, and
# PyPI's torch wheel (the worker's LibTorch and the references' PyTorch) pinned in
# deploy/torch.env, in a virtual environment outside the clone. Idempotent: packages
# already present and a venv that already holds the pinned torch are left as they are.
# Needs root (or sudo). Debian's LibTorch 1.13, the second version the tests build a
# worker against, is deploy/install-legacy-torch.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/torch.env

packages=(
  build-essential cmake ccache pkg-config
  # the linker (CMakeLists.txt: BENCHFLEET_USE_LLD)
  lld
  # The wheel's ProcessGroupGloo.hpp includes Gloo's headers, which the wheel leaves out.
  libgloo-dev
  # The venv for the torch wheel; Inductor (AOTI packages) compiles C++ with Python's headers.
  python3-venv python3-dev
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
  # the tree's formatting (tests/format_test.sh checks it with this version, 14)
  clang-format
  # ip netns and veth pairs: the cross-host gang test (tests/netns_gang_test.sh)
  iproute2
  # headless rendering of `benchfleet report` pages (tests/report_test.cc)
  chromium
  # a real single-node Slurm for the agents-as-jobs test (tests/slurm/)
  slurm-wlm slurmctld slurmd slurm-client munge
  # a real Prometheus and promtool: the scrape test and the alert rules (deploy/prometheus/)
  prometheus
  # the manifests test reads deploy/kubernetes/ (tests/kubernetes/)
  python3-yaml
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

# Debian's libtorch-dev (this script's LibTorch before the wheel) puts libtorch*.so in
# /usr/lib/<arch>, where Inductor's link lines look first: AOTI packages would then link
# against 1.13 and lose their vector ISA (deploy/torch.env). It goes; its 1.13 runtime may
# stay (deploy/install-legacy-torch.sh unpacks the development files apart).
if dpkg-query -W -f='${Status}' libtorch-dev 2>/dev/null | grep -q "install ok installed"; then
  echo "install-deps: removing libtorch-dev (its libtorch*.so links shadow the wheel's LibTorch)"
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get remove -y -qq libtorch-dev
fi

# The torch wheel, in its own venv (Debian 12's pip refuses to install into the system's
# Python). Built in a scratch directory beside it and moved into place only once torch
# imports, so a failed install (no network, a full disk, no wheel for this Python) stops
# here with its reason and leaves no half-made venv for the next run to trust.
fail() { echo "install-deps: $*" >&2; exit 1; }
venv=$BENCHFLEET_TORCH_VENV
# What the venv holds: torch's version, when torchao and numpy of their pins are beside it.
installed_torch() {
  "$1/bin/python" - "$BENCHFLEET_TORCHAO_VERSION" "$BENCHFLEET_NUMPY_VERSION" 2>/dev/null <<'PY'
import sys
import importlib.metadata as m
import torch
if m.version("torchao") == sys.argv[1] and m.version("numpy") == sys.argv[2]:
    print(torch.__version__)
PY
}
if [[ $(installed_torch "$venv") == "$BENCHFLEET_TORCH_VERSION"* ]]; then
  echo "install-deps: torch $(installed_torch "$venv") in $venv"
else
  parent=$(dirname "$venv")
  "${sudo_cmd[@]}" mkdir -p "$parent" || fail "cannot make $parent"
  free_mb=$(df -Pm "$parent" | awk 'NR == 2 {print $4}')
  ((free_mb >= BENCHFLEET_TORCH_VENV_MIN_FREE_MB)) ||
    fail "torch $BENCHFLEET_TORCH_VERSION needs ${BENCHFLEET_TORCH_VENV_MIN_FREE_MB} MiB free in $parent; it has $free_mb MiB"
  scratch=$venv.partial
  "${sudo_cmd[@]}" rm -rf "$scratch"
  echo "install-deps: torch==$BENCHFLEET_TORCH_VERSION into $venv (some 5 GiB with its CUDA libraries)"
  "${sudo_cmd[@]}" /usr/bin/python3 -m venv "$scratch" ||
    fail "/usr/bin/python3 -m venv $scratch failed (is python3-venv installed?)"
  if ! "${sudo_cmd[@]}" "$scratch/bin/pip" install --no-cache-dir --disable-pip-version-check --progress-bar off \
      "torch==$BENCHFLEET_TORCH_VERSION" "numpy==$BENCHFLEET_NUMPY_VERSION" \
      "torchao==$BENCHFLEET_TORCHAO_VERSION"; then
    "${sudo_cmd[@]}" rm -rf "$scratch"
    fail "pip could not install torch==$BENCHFLEET_TORCH_VERSION for Debian's $(/usr/bin/python3 --version) (its reason is above: no network, a full disk, or no wheel for this Python)"
  fi
  # The venv's scripts name their directory in their #! line: made as the scratch, they
  # are rewritten (text files only; bin/python is a link to the system's python3).
  "${sudo_cmd[@]}" rm -rf "$venv"
  "${sudo_cmd[@]}" mv "$scratch" "$venv"
  grep -lI -F "$scratch" "$venv"/bin/* 2>/dev/null | while read -r script; do
    "${sudo_cmd[@]}" sed -i "s|$scratch|$venv|g" "$script"
  done
  [[ $(installed_torch "$venv") == "$BENCHFLEET_TORCH_VERSION"* ]] ||
    fail "torch in $venv does not import after the install; remove $venv and run again"
  echo "install-deps: torch $(installed_torch "$venv") in $venv"
fi
