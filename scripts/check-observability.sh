#!/usr/bin/env bash
# Validates the observability artefacts against the code:
#  - promtool check rules / test rules on deploy/prometheus;
#  - every Grafana dashboard is valid JSON with the conventions we keep,
#    and every panel query parses (as a recording rule, through promtool);
#  - dashboards and alerts name only metrics the code exports;
#  - a full scrape of the metrics registry passes `promtool check metrics`;
#  - alerts and dashboards are made for a cluster (fleet_labels.py): every
#    aggregation keeps cluster and namespace, runbook links are absolute,
#    every dashboard has cluster/namespace/job variables that filter every
#    query, and uses every variable it declares; the broken examples of
#    scripts/observability/broken are refused.
# Installs promtool from Debian when it is missing, and promql-parser into
# .venv-obs on first use (under CI=true, failing to fails the run; elsewhere
# the fleet-label checks are skipped with a note).
# Usage: scripts/check-observability.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v promtool >/dev/null 2>&1; then
  echo "installing promtool (Debian package prometheus)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

VENV=${VENV_OBS:-.venv-obs}
OBS_TOOLS=(promql-parser==0.12.0 PyYAML)
if ! "$VENV/bin/python" -c 'import promql_parser, yaml' 2>/dev/null; then
  echo "installing ${OBS_TOOLS[*]} into $VENV" >&2
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q "${OBS_TOOLS[@]}" || true
fi
fleet_labels=yes
if ! "$VENV/bin/python" -c 'import promql_parser, yaml' 2>/dev/null; then
  if [ "${CI:-}" = "true" ]; then
    echo "FAIL: could not install ${OBS_TOOLS[*]} (needed under CI=true)" >&2
    exit 1
  fi
  echo "SKIP fleet-label checks: ${OBS_TOOLS[*]} not installable here (set CI=true to make this fatal)" >&2
  fleet_labels=no
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
# --workspace: the features the test build of `make test` resolved, so
# its artifacts are reused; `-p deepfleet-fleet` alone would build the
# crate's dependencies again with its own features.
DEEPFLEET_METRICS_SAMPLE="$work/scrape.txt" \
  ${CARGO:-cargo} test -q --workspace --lib -- --exact metrics::tests::metric_names_list_every_exported_family >/dev/null
promtool check metrics < "$work/scrape.txt"

echo "== dashboards"
python3 scripts/observability/dashboards.py "$work/scrape.txt" "$work/dashboards.rules.yml" \
  deploy/grafana/*.json deploy/prometheus/alerts.yml
promtool check rules "$work/dashboards.rules.yml"

if [ "$fleet_labels" = yes ]; then
  echo "== fleet labels (cluster, namespace, job)"
  "$VENV/bin/python" scripts/observability/fleet_labels.py deploy/prometheus/alerts.yml deploy/grafana/*.json
  "$VENV/bin/python" -m unittest discover -s scripts/observability -p 'test_*.py'
fi
echo "observability checks passed"
