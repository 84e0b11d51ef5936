#!/usr/bin/env bash
# Runs schemathesis (from PyPI, pinned, in target/schemathesis-venv)
# against `deepfleet dev` serving examples/briefings (as the graph
# `agent`) with an API key:
# every operation of /openapi.json, stateless phases (examples, coverage,
# fuzzing) then the stateful one, checking that no answer is a 5xx and
# that every answer's status, content type, headers and body match the
# description, and that a call without the key is refused. Exits
# non-zero on any failure.
#
# Usage: scripts/schemathesis.sh [short|long]
#   short (the default, within `make test`): few examples per operation,
#     a few minutes at most.
#   long (`make schemathesis`): many more, and its outcome is written to
#     docs/schemathesis.md.
# Under CI=true a missing python3 or a failed install fails the run;
# elsewhere it is skipped with a note.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${1:-short}
CARGO=${CARGO:-cargo}
# The tree the served binary is built from, read before the build: the
# report names it, not whatever is checked out when the run ends.
COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD 2>/dev/null || echo "+changes")
VENV=target/schemathesis-venv
SCHEMATHESIS_VERSION=4.32.5
case "$MODE" in
  short) MAX_EXAMPLES=${SCHEMATHESIS_MAX_EXAMPLES:-5}; MAX_SECONDS=${SCHEMATHESIS_MAX_SECONDS:-300} ;;
  long) MAX_EXAMPLES=${SCHEMATHESIS_MAX_EXAMPLES:-200}; MAX_SECONDS=${SCHEMATHESIS_MAX_SECONDS:-3600} ;;
  *) echo "usage: $0 [short|long]" >&2; exit 2 ;;
esac

fail() {
  if [ "${CI:-}" = "true" ]; then
    echo "schemathesis: FAIL: $1 (needed under CI=true)" >&2
    exit 1
  fi
  echo "schemathesis: SKIP: $1 (set CI=true to make this fatal)" >&2
  exit 0
}

command -v python3 >/dev/null 2>&1 || fail "python3 is not installed"
if ! "$VENV/bin/schemathesis" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
  echo "[schemathesis] installing schemathesis $SCHEMATHESIS_VERSION into $VENV" >&2
  { python3 -m venv "$VENV" &&
    "$VENV/bin/pip" install --quiet --disable-pip-version-check \
      "schemathesis==$SCHEMATHESIS_VERSION"; } ||
    fail "cannot install schemathesis $SCHEMATHESIS_VERSION from PyPI"
fi

$CARGO build --quiet --bin deepfleet
BIN=${CARGO_TARGET_DIR:-$PWD/target}/debug/deepfleet

# A free port, a key, and a working directory of its own (the dev
# server's state stays there).
WORK=$(mktemp -d)
DEV_PID=
cleanup() {
  if [ -n "$DEV_PID" ]; then kill "$DEV_PID" 2>/dev/null || true; wait "$DEV_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ADDR=127.0.0.1:$PORT
mapfile -t KEY < <("$BIN" api-key new --tenant default --role admin)
# The example agent, served as `agent`: the graph the description's
# example bodies name.
sed 's/^name: briefings$/name: agent/' examples/briefings/agent.yaml >"$WORK/agent.yaml"
cp examples/briefings/script.yaml "$WORK/"
(
  cd "$WORK"
  DEEPFLEET__API__KEYS__SCHEMATHESIS="${KEY[1]}" RUST_LOG=${RUST_LOG:-warn} \
    exec "$BIN" dev --listen "$ADDR" --agents "$WORK" >"$WORK/dev.log" 2>&1
) &
DEV_PID=$!
for _ in $(seq 1 100); do
  curl -fsS "http://$ADDR/ok" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fsS "http://$ADDR/ok" >/dev/null || { cat "$WORK/dev.log" >&2; echo "deepfleet dev did not start" >&2; exit 1; }

ARGS=(
  run "http://$ADDR/openapi.json"
  --header "x-api-key: ${KEY[0]}"
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance,ignored_auth
  --phases examples,coverage,fuzzing,stateful
  --max-examples "$MAX_EXAMPLES"
  --workers 1
  --seed "${SCHEMATHESIS_SEED:-1}"
)
# Generated bodies name the served graph most of the time, so that runs,
# assistants and crons are created and the operations on them reached
# (a random name is only ever a 404).
# A thread's streams idle by design until a run comes (heartbeats keep
# them open for up to an hour): a case that opens one on an idle thread
# gets its response head, then a short read before the next case.
cat >"$WORK/schemathesis.toml" <<'TOML'
request-timeout = 30
parameters = { "body.assistant_id" = { dictionary = "graphs", probability = 0.9 }, "body.graph_id" = { dictionary = "graphs", probability = 0.9 } }

[dictionaries]
graphs = { values = ["agent"] }

[[operations]]
include-path-regex = "^/threads/[^/]+/stream(/events)?$"
request-timeout = 3
TOML

# schemathesis keeps a cache in its working directory: the server's.
VENV_BIN=$PWD/$VENV/bin
STATUS=0
if [ "$MODE" = long ]; then
  OUT=$WORK/schemathesis.out
  (cd "$WORK" && timeout "$MAX_SECONDS" "$VENV_BIN/schemathesis" --no-color --config-file "$WORK/schemathesis.toml" "${ARGS[@]}") 2>&1 | tee "$OUT" || STATUS=$?
  {
    echo "# schemathesis against the scheduler's API"
    echo
    echo "Written by \`make schemathesis\` (scripts/schemathesis.sh long): schemathesis"
    echo "$SCHEMATHESIS_VERSION, every operation of \`/openapi.json\` served by \`deepfleet dev\`"
    echo "with an API key, phases examples, coverage, fuzzing and stateful, at most"
    echo "$MAX_EXAMPLES examples per operation, seed ${SCHEMATHESIS_SEED:-1}. Checks: no 5xx, and"
    echo "every answer's status, content type, headers and body as described, and"
    echo "a call without the key refused."
    echo
    echo "- Date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "- Commit: $COMMIT"
    echo "- Outcome: $([ "$STATUS" = 0 ] && echo passed || echo "FAILED (exit $STATUS)")"
    echo
    echo '```text'
    cat "$OUT"
    echo '```'
  } >docs/schemathesis.md
  echo "[schemathesis] report written to docs/schemathesis.md" >&2
else
  (cd "$WORK" && timeout "$MAX_SECONDS" "$VENV_BIN/schemathesis" --no-color --config-file "$WORK/schemathesis.toml" "${ARGS[@]}") || STATUS=$?
fi
if [ "$STATUS" != 0 ]; then
  echo "[schemathesis] failed (exit $STATUS); the server's log:" >&2
  tail -50 "$WORK/dev.log" >&2
fi
exit "$STATUS"
