#!/usr/bin/env bash
# Unpacks what a worker-only build (-DBENCHFLEET_WORKER_ONLY=ON, docs/gpu.md) needs
# besides LibTorch into DIR (default worker-deps/, ignored by git): the header-only
# nlohmann_json and CLI11, and GoogleTest for the worker's tests, as files from Debian's
# own packages (dpkg -x, nothing installed), so the folder can travel to a GPU host that
# has no package manager. Point CMake at DIR/usr (deploy/gpu-check.sh does). Gloo's
# headers (libgloo-dev) go apart, into DIR/gloo: the worker's c10d code includes them, and
# a LibTorch that does not ship its own (BENCHFLEET_GLOO_INCLUDE_DIR,
# worker/parallel/CMakeLists.txt) builds against these; one that does keeps its own.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-worker-deps}
packages=(nlohmann-json3-dev libcli11-dev libgtest-dev libgloo-dev)
debs=$(mktemp -d)
trap 'rm -rf "$debs"' EXIT
chmod 755 "$debs"  # apt downloads as its own user
(cd "$debs" && apt-get -o APT::Sandbox::User=root download "${packages[@]}" >/dev/null) || {
  echo "worker-only-deps: apt-get download ${packages[*]} failed (run apt-get update?)" >&2
  exit 1
}
rm -rf "$dir"
mkdir -p "$dir"
for deb in "$debs"/*.deb; do
  case $(basename "$deb") in
    libgloo-dev_*) dpkg -x "$deb" "$dir/gloo" ;;
    *) dpkg -x "$deb" "$dir" ;;
  esac
done
# What was unpacked, for the record of a run elsewhere.
for deb in "$debs"/*.deb; do dpkg-deb --showformat='${Package} ${Version}\n' -W "$deb"; done >"$dir/PACKAGES"
echo "worker-only-deps: $(paste -sd, "$dir/PACKAGES") in $dir ($(du -sh "$dir" | cut -f1))"
