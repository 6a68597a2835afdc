#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs the message fuzzer: the
# wire decoder, the sweep-file parser and the coordinator's handlers (in process, over a
# :memory: store), with a structure-aware mutator that swaps JSON types at every depth.
# usage: deploy/fuzz.sh [RUNS]     (default 1000000 executions; CI runs a shorter one)
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/ccache-env.sh
runs=${1:-1000000}
build_dir=${BENCHFLEET_FUZZ_BUILD_DIR:-build-fuzz}
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DBENCHFLEET_FUZZ=ON -DBENCHFLEET_BUILD_WORKER=OFF -DBENCHFLEET_BUILD_TESTS=OFF >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target message_fuzzer
# libFuzzer adds what it finds to the corpus directory: work on a copy of the seeds.
# The seeds are the golden message of every type (schemas/golden/, the protocol's own
# examples, never a copy that drifts), the example sweep files (examples/) and the inputs
# that once found a bug (fuzz/corpus/).
corpus=$(mktemp -d -t benchfleet-corpus.XXXXXX)
trap 'rm -rf "$corpus"' EXIT
for seed in schemas/golden/*.json; do cp "$seed" "$corpus/golden-$(basename "$seed")"; done
for seed in examples/*.json; do cp "$seed" "$corpus/sweep-$(basename "$seed")"; done
cp fuzz/corpus/* "$corpus"/
"$build_dir/fuzz/message_fuzzer" -runs="$runs" -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$build_dir/" "$corpus"
