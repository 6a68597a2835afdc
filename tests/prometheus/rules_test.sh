#!/usr/bin/env bash
# deploy/prometheus/ as Prometheus reads it: the alerting rules pass `promtool check
# rules`, their unit tests (benchfleet-rules.test.yml) pass `promtool test rules`, and the
# example configuration passes `promtool check config` (which loads the rules it names).
# Exits 77 (skipped, saying why) where promtool is not installed.
#
# usage: tests/prometheus/rules_test.sh SOURCE_DIR
set -euo pipefail

root=${1:?usage: rules_test.sh SOURCE_DIR}
if ! command -v promtool >/dev/null 2>&1; then
  echo "skipped: promtool is not installed (Debian: apt-get install prometheus; deploy/install-deps.sh)"
  exit 77
fi
dir=$root/deploy/prometheus
promtool check rules "$dir/benchfleet-rules.yml"
promtool check config "$dir/prometheus.yml"
# Relative to the test file, as the rules' own rule_files entry is.
(cd "$dir" && promtool test rules benchfleet-rules.test.yml)
echo "rules_test: ok"
