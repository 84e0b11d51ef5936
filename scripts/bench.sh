#!/usr/bin/env bash
# `make bench`: regenerates BENCHMARKS.md and docs/bench/*.png.
#
# Builds the release binaries, saves the worker's compression-check table,
# prepares a venv with deepagents 0.7.32 (the comparison; left out with a
# note when PyPI cannot be reached) and runs deepfleet-bench. Needs
# RabbitMQ and Redis on 127.0.0.1 (`scripts/services.sh`, which `make
# bench` runs first). Extra arguments go to deepfleet-bench (`--quick`).
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
TARGET=${CARGO_TARGET_DIR:-target}
WORK=target/bench
VENV=target/bench-venv
mkdir -p "$WORK"

echo "[bench] building release binaries" >&2
"$CARGO" build --release -p deepfleet -p deepfleet-bench

echo "[bench] compression-check bench" >&2
compression=()
if "$CARGO" bench -p deepfleet-worker --bench compression_check > "$WORK/compression_check.md"; then
    compression=(--compression-check "$WORK/compression_check.md")
else
    echo "[bench] the compression-check bench failed; its column is left out" >&2
fi

python=()
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import deepagents, langchain_openai' 2>/dev/null; then
    echo "[bench] installing deepagents 0.7.32 into $VENV" >&2
    if python3 -m venv "$VENV" &&
        "$VENV/bin/pip" install --quiet --disable-pip-version-check \
            'deepagents==0.7.32' langchain-openai >&2; then
        :
    else
        python=(--python-note "installing deepagents==0.7.32 from PyPI failed (is PyPI reachable?)")
    fi
fi
if [ ${#python[@]} -eq 0 ]; then
    python=(--python "$VENV/bin/python")
fi

"$TARGET/release/deepfleet-bench" \
    --deepfleet "$TARGET/release/deepfleet" \
    --loopback-client "$TARGET/release/loopback-client" \
    "${python[@]}" "${compression[@]}" \
    --out BENCHMARKS.md --plots docs/bench --work-dir "$WORK" "$@"
