#!/usr/bin/env bash
# Validates the observability artefacts against the code:
#  - promtool check rules / test rules on deploy/prometheus;
#  - every Grafana dashboard is valid JSON with the conventions we keep,
#    and every panel query parses (as a recording rule, through promtool);
#  - dashboards and alerts name only metrics the code exports;
#  - a full scrape of the metrics registry passes `promtool check metrics`.
# Installs promtool from Debian when it is missing. Usage: scripts/check-observability.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v promtool >/dev/null 2>&1; then
  echo "installing promtool (Debian package prometheus)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== alert rules"
for rules in deploy/prometheus/*.yml; do
  case "$rules" in *_test.yml) continue ;; esac
  promtool check rules "$rules"
done
promtool test rules deploy/prometheus/*_test.yml

echo "== metrics exposition"
DEEPFLEET_METRICS_SAMPLE="$work/scrape.txt" \
  ${CARGO:-cargo} test -q -p deepfleet-fleet --lib metrics::tests::metric_names_list_every_exported_family >/dev/null
promtool check metrics < "$work/scrape.txt"

echo "== dashboards"
python3 scripts/observability/dashboards.py "$work/scrape.txt" "$work/dashboards.rules.yml" \
  deploy/grafana/*.json deploy/prometheus/alerts.yml
promtool check rules "$work/dashboards.rules.yml"
echo "observability checks passed"
