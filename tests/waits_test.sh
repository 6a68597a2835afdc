#!/usr/bin/env bash
# Tests wait on conditions with deadlines, or on an injected clock the test moves on
# (coordinator: MonotonicClock; agent: AgentOptions::clock), never for a fixed time. The
# sleeps left in test code are waits on real processes (a poll of a condition, a fault
# schedule, a worker's own time): each says why in a comment on its line or on one of
# the three lines above. This lists every sleep in the tests' sources and fails on one
# that does not.
#
# usage: tests/waits_test.sh SOURCE_DIR
#        tests/waits_test.sh --self-test
set -euo pipefail

# Prints FILE:LINE for each sleep in FILE with no comment near it.
undocumented() {
  awk -v file="$1" '
    { line[NR] = $0 }
    /(sleep_for|usleep|nanosleep|[^a-z_]sleep)\(/ && !/^[[:space:]]*\/\// {
      documented = 0
      for (i = NR; i >= NR - 3 && i >= 1; --i) if (line[i] ~ /\/\//) documented = 1
      if (!documented) print file ":" NR ": " $0
    }' "$1"
}

check_tree() {
  local root=$1 found=0 file
  while IFS= read -r file; do
    local bad
    bad=$(undocumented "$file")
    if [[ -n $bad ]]; then
      echo "$bad"
      found=1
    fi
  done < <(find "$root" \( -path "$root/build*" -o -path "$root/.git" \) -prune -o \
             \( -name '*_test.cc' -o -path "$root/tests/*.cc" \) -type f -print | sort)
  return $found
}

if [[ ${1:-} == --self-test ]]; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  mkdir -p "$dir/tests"
  printf 'void A() {\n  // the fault schedule\n  sleep_for(1s);\n}\n' >"$dir/tests/good_test.cc"
  check_tree "$dir" >/dev/null || { echo "waits_test: a documented sleep was refused" >&2; exit 1; }
  printf 'void B() {\n  int x = 0;\n  int y = 1;\n  int z = 2;\n  int w = 3;\n  usleep(1000);\n}\n' >"$dir/tests/bad_test.cc"
  if check_tree "$dir" >/dev/null; then
    echo "waits_test: an undocumented sleep was not caught" >&2
    exit 1
  fi
  echo "waits_test self-test: ok"
  exit 0
fi

root=${1:?usage: waits_test.sh SOURCE_DIR}
if ! check_tree "$root"; then
  echo "waits_test: the sleeps above say nothing of why they wait: wait on a condition with a" >&2
  echo "deadline, move an injected clock, or say in a comment what real process is waited on" >&2
  exit 1
fi
echo "waits_test: every sleep in the tests says why"
