#!/usr/bin/env bash
# The layering rule, checked on the source tree: links point one way. docs/architecture.md
# tells the life of a job across these folders, naming the component at each hop.
#   common              includes no daemon folder (coordinator, agent, worker, cli), nor schedule,
#                       sqlite or metrics;
#   schedule            (cron and time zones) includes only common;
#   sqlite              (the SQLite wrapper, the read-only reader, the store's schema)
#                       includes only common;
#   metrics             (Prometheus' text format, the HTTP endpoint, latency histograms)
#                       includes only common;
#   coordinator, agent, cli  never include worker/ or each other; coordinator and cli
#                       may include sqlite, agent and worker may not; coordinator and
#                       agent may include metrics, cli and worker may not;
#   worker              includes only common (and LibTorch);
# and inside worker/ (worker/CMakeLists.txt), its folders point one way too:
#   worker/host, worker/measure   include no other part of the worker;
#   worker/models                 includes worker/host and worker/measure;
#   worker/parallel               includes worker/host, worker/measure and worker/models;
#   worker/ itself (main, the job runner) includes them all. A unit test (foo_test.cc) in
#   a folder may also run its code through the job runner (worker/job_runner.h), as the
#   worker's process does.
# and inside coordinator/ (coordinator/CMakeLists.txt, docs/architecture.md):
#   coordinator/core      (pure rules: matching, fingerprints, statistics) includes none;
#   coordinator/metrics   (the coordinator's families: its snapshot and their rendering)
#                         includes none;
#   coordinator/security  (CURVE allow-list, ZAP) includes none;
#   coordinator/store     (the SQLite store) includes core;
#   coordinator/loop      (context, round, outlet, registry, lease table) includes store
#                         and core;
#   coordinator/fleet     (dispatcher, agent sessions) includes loop and below;
#   coordinator/results, coordinator/intake   include fleet and below, not each other;
#   coordinator/api       (client requests, the metrics' publisher) includes them all;
#   coordinator/ itself (the loop that wires them, main) includes every folder. A unit
#   test in a folder may also drive the whole coordinator (coordinator/coordinator_fixture.h).
# Code that only one daemon uses belongs in that daemon's folder, not in common/.
#
#   layering_test.sh SOURCE_DIR   scan SOURCE_DIR; exit 1 naming every include that breaks the rule
#   layering_test.sh --self-test  check that a tree with violations is caught
set -euo pipefail

# folder -> the folders it must not include
declare -A FORBIDDEN=(
  [common]="coordinator agent worker cli schedule sqlite metrics"
  [schedule]="coordinator agent worker cli sqlite metrics"
  [sqlite]="coordinator agent worker cli schedule metrics"
  [metrics]="coordinator agent worker cli schedule sqlite"
  [coordinator]="agent worker cli"
  [agent]="coordinator worker cli sqlite"
  [cli]="coordinator agent worker metrics"
  [worker]="coordinator agent cli sqlite metrics"
)

# worker/'s folder -> the other worker folders it may include
declare -A WORKER_ALLOWED=(
  [host]=""
  [measure]=""
  [models]="host measure"
  [parallel]="host measure models"
)

# coordinator/'s folder -> the other coordinator folders it may include
declare -A COORDINATOR_ALLOWED=(
  [core]=""
  [metrics]=""
  [security]=""
  [store]="core"
  [loop]="core store"
  [fleet]="core store loop"
  [results]="core store loop fleet"
  [intake]="core store loop fleet"
  [api]="core store metrics loop fleet results intake security"
)

# Prints each include of DAEMON's own headers in DAEMON/FOLDER/ that breaks ALLOWED (the
# folders it may include), one line each. A header at DAEMON/'s top (the job runner, the
# coordinator's fixture) is for a unit test only.
folder_violations() {
  local root=$1 daemon=$2 folder=$3 allowed=$4 hit file target
  while IFS= read -r hit; do
    [[ -n "$hit" ]] || continue
    file=${hit%%:*}
    target=$(sed -E "s|^[^:]*:[0-9]+:.*[<\"]$daemon/([^\">]*)[\">].*|\\1|" <<<"$hit")
    if [[ "$target" == */* ]]; then
      target=${target%%/*}
      [[ "$target" == "$folder" || " $allowed " == *" $target "* ]] && continue
    else
      [[ "$file" == *_test.cc ]] && continue  # the whole daemon, driving a unit test
    fi
    echo "layering: $hit  ($daemon/$folder/ may include of the $daemon: ${allowed:-nothing else})"
  done < <(cd "$root" && grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<]$daemon/" \
             "$daemon/$folder" --include='*.h' --include='*.hpp' --include='*.cc' \
             --include='*.cpp' --include='*.cu' --include='*.cuh' --include='*.in' || true)
}

check_tree() {
  local root=$1 violations=0 folder pattern hits
  for folder in "${!FORBIDDEN[@]}"; do
    [[ -d "$root/$folder" ]] || continue
    pattern="^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<]($(tr ' ' '|' <<<"${FORBIDDEN[$folder]}"))/"
    hits=$(cd "$root" && grep -rnE "$pattern" "$folder" \
             --include='*.h' --include='*.hpp' --include='*.cc' --include='*.cpp' \
             --include='*.cu' --include='*.cuh' --include='*.in' || true)
    if [[ -n "$hits" ]]; then
      while IFS= read -r hit; do
        echo "layering: $hit  ($folder/ may not include: ${FORBIDDEN[$folder]})" >&2
        violations=$((violations + 1))
      done <<<"$hits"
    fi
  done
  for folder in "${!WORKER_ALLOWED[@]}"; do
    [[ -d "$root/worker/$folder" ]] || continue
    hits=$(folder_violations "$root" worker "$folder" "${WORKER_ALLOWED[$folder]}")
    if [[ -n "$hits" ]]; then
      echo "$hits" >&2
      violations=$((violations + $(wc -l <<<"$hits")))
    fi
  done
  for folder in "${!COORDINATOR_ALLOWED[@]}"; do
    [[ -d "$root/coordinator/$folder" ]] || continue
    hits=$(folder_violations "$root" coordinator "$folder" "${COORDINATOR_ALLOWED[$folder]}")
    if [[ -n "$hits" ]]; then
      echo "$hits" >&2
      violations=$((violations + $(wc -l <<<"$hits")))
    fi
  done
  if ((violations > 0)); then
    echo "layering: $violations include(s) break the rule (see DESIGN.md, Layout)" >&2
    return 1
  fi
  echo "layering: ok"
}

self_test() {
  local tree output status=0
  tree=$(mktemp -d)
  trap 'rm -rf "$tree"' RETURN
  mkdir -p "$tree"/{common,agent,metrics,coordinator/{core,store,fleet},cli,sqlite,worker/{host,measure,models,parallel}}
  printf '#include "coordinator/loop/context.h"\n#include "coordinator/core/matching.h"\n' \
    >"$tree/coordinator/store/bad.cc"
  printf '#include "coordinator/coordinator.h"\n' >"$tree/coordinator/core/bad.h"
  printf '#include "coordinator/loop/round.h"\n#include "coordinator/store/store.h"\n' \
    >"$tree/coordinator/fleet/good.cc"
  printf '#include "coordinator/coordinator_fixture.h"\n' >"$tree/coordinator/fleet/good_test.cc"
  printf '#include "common/status.h"\n#include "agent/spool.h"\n' >"$tree/common/bad.h"
  printf '#include "common/log.h"\n#include "metrics/metrics_server.h"\n' >"$tree/agent/good.cc"
  printf '#include "common/status.h"\n#include "coordinator/metrics/exposition.h"\n' \
    >"$tree/metrics/bad.cc"
  printf '#include "metrics/histogram.h"\n' >"$tree/worker/host/bad.cc"
  printf '#include <nlohmann/json.hpp>\n  #  include <worker/engine.h>\n' >"$tree/cli/bad.cc"
  printf '#include "coordinator/store/store.h"\n#include "sqlite/reader.h"\n' >"$tree/coordinator/good.cc"
  printf '#include "sqlite/reader.h"\n' >"$tree/cli/good.cc"
  printf '#include "common/status.h"\n#include "coordinator/store/store.h"\n' >"$tree/sqlite/bad.cc"
  printf '#include "sqlite/sqlite.h"\n' >"$tree/agent/bad.h"
  printf '#include "coordinator/store/store.h"\n' >"$tree/agent/bad.cc"
  printf '#include "worker/models/model.h"\n' >"$tree/worker/measure/bad.cc"
  printf '#include "worker/measure/clock.h"\n#include <worker/job_runner.h>\n' >"$tree/worker/host/bad.h"
  printf '#include "worker/serving_job.h"\n' >"$tree/worker/parallel/bad.cc"
  printf '#include "worker/measure/sampler.h"\n#include "worker/host/torch_runtime.h"\n#include "worker/models/model.h"\n' \
    >"$tree/worker/models/good.cc"
  printf '#include "worker/job_runner.h"\n#include "worker/models/model.h"\n' >"$tree/worker/models/good_test.cc"
  printf '#include "worker/parallel/ranks.h"\n#include "common/job_spec.h"\n' >"$tree/worker/good.cc"
  output=$(check_tree "$tree" 2>&1) || status=$?
  local expect
  for expect in "common/bad.h:2:" "cli/bad.cc:2:" "agent/bad.cc:1:" "worker/measure/bad.cc:1:" \
                "worker/host/bad.h:1:" "worker/host/bad.h:2:" "worker/parallel/bad.cc:1:" \
                "sqlite/bad.cc:2:" "agent/bad.h:1:" "coordinator/store/bad.cc:1:" \
                "coordinator/core/bad.h:1:" "metrics/bad.cc:2:" "worker/host/bad.cc:1:" \
                "13 include(s) break"; do
    if [[ "$output" != *"$expect"* ]]; then
      echo "self-test: expected \"$expect\" in:"$'\n'"$output" >&2
      return 1
    fi
  done
  if [[ "$output" == *good* ]] || ((status == 0)); then
    echo "self-test: wrong verdict (exit $status):"$'\n'"$output" >&2
    return 1
  fi
  echo "layering self-test: ok"
}

case "${1:-}" in
  --self-test) self_test ;;
  "") echo "usage: $0 SOURCE_DIR | --self-test" >&2; exit 2 ;;
  *) check_tree "$1" ;;
esac
