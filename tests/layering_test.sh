#!/usr/bin/env bash
# The layering rule of DESIGN.md, checked on the source tree: links point one way.
#   common              includes no daemon folder (coordinator, agent, worker, cli), nor schedule;
#   schedule            (cron and time zones) includes only common;
#   coordinator, agent, cli  never include worker/ or each other;
#   worker              includes only common (and LibTorch).
# Code that only one daemon uses belongs in that daemon's folder, not in common/.
#
#   layering_test.sh SOURCE_DIR   scan SOURCE_DIR; exit 1 naming every include that breaks the rule
#   layering_test.sh --self-test  check that a tree with violations is caught
set -euo pipefail

# folder -> the folders it must not include
declare -A FORBIDDEN=(
  [common]="coordinator agent worker cli schedule"
  [schedule]="coordinator agent worker cli"
  [coordinator]="agent worker cli"
  [agent]="coordinator worker cli"
  [cli]="coordinator agent worker"
  [worker]="coordinator agent cli"
)

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
  mkdir -p "$tree"/{common,agent,coordinator,cli,worker}
  printf '#include "common/status.h"\n#include "agent/spool.h"\n' >"$tree/common/bad.h"
  printf '#include "common/log.h"\n' >"$tree/agent/good.cc"
  printf '#include <nlohmann/json.hpp>\n  #  include <worker/engine.h>\n' >"$tree/cli/bad.cc"
  printf '#include "coordinator/store.h"\n' >"$tree/coordinator/good.cc"
  printf '#include "coordinator/store.h"\n' >"$tree/agent/bad.cc"
  output=$(check_tree "$tree" 2>&1) || status=$?
  local expect
  for expect in "common/bad.h:2:" "cli/bad.cc:2:" "agent/bad.cc:1:" "3 include(s) break"; do
    if [[ "$output" != *"$expect"* ]]; then
      echo "self-test: expected \"$expect\" in:"$'\n'"$output" >&2
      return 1
    fi
  done
  if [[ "$output" == *good.cc* ]] || ((status == 0)); then
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
