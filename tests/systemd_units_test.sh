#!/usr/bin/env bash
# The systemd units of deploy/systemd pass `systemd-analyze verify`, run against the
# binaries just built (a copy of each unit whose ExecStart points at the build).
#   systemd_units_test.sh SOURCE_DIR COORDINATOR_BIN AGENT_BIN
# Exits 77 (skipped) where systemd-analyze is not installed.
set -euo pipefail
source_dir=$1 coordinator=$2 agent=$3
if ! command -v systemd-analyze >/dev/null; then
  echo "systemd_units_test: systemd-analyze is not installed here; skipped" >&2
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for unit in benchfleet-coordinator benchfleet-agent; do
  binary=$coordinator
  [[ $unit == benchfleet-agent ]] && binary=$agent
  sed -e "s|/usr/local/bin/$unit|$binary|" \
      -e "s|/etc/benchfleet/|$work/etc/|" "$source_dir/deploy/systemd/$unit.service" >"$work/$unit.service"
  grep -q "ExecStart=$binary" "$work/$unit.service" || { echo "$unit: ExecStart not found" >&2; exit 1; }
done
mkdir -p "$work/etc"
cp "$source_dir/deploy/systemd/coordinator.env.example" "$work/etc/coordinator.env"
cp "$source_dir/deploy/systemd/agent.env.example" "$work/etc/agent.env"
# verify prints each problem and exits non-zero on errors; warnings about the host
# (no dbus in a container) are not the units' fault and are shown only.
output=$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no \
           "$work/benchfleet-coordinator.service" "$work/benchfleet-agent.service" 2>&1) || {
  echo "$output" >&2
  echo "systemd_units_test: systemd-analyze verify failed" >&2
  exit 1
}
# A setting it cannot parse is only a warning to systemd ("..., ignoring"), naming the
# file and line: for us it is a broken unit.
if grep -q "$work/benchfleet-.*\.service:" <<<"$output"; then
  echo "$output" >&2
  echo "systemd_units_test: a unit has a setting systemd ignores" >&2
  exit 1
fi
[[ -z $output ]] || echo "$output"
echo "systemd_units_test: both units verify"
