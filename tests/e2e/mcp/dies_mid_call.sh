#!/usr/bin/env bash
# An MCP server over stdio that dies during a call, whichever worker
# makes it: server-everything ($1, its dist/index.js) behind a relay that
# kills it one second after passing on a `tools/call` of
# trigger-long-running-operation. MCP's stdio framing is one JSON message
# per line, so the relay reads lines.
set -uo pipefail
coproc SERVER { exec node "$1" stdio; }
# A background job does not inherit the coprocess's descriptors; a copy.
exec 3<&"${SERVER[0]}"
cat <&3 &
exec 3<&-
while IFS= read -r line; do
  printf '%s\n' "$line" >&"${SERVER[1]}"
  if [[ $line == *'"tools/call"'* && $line == *trigger-long-running-operation* ]]; then
    sleep 1
    kill "$SERVER_PID"
    exit 1
  fi
done
