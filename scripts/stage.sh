#!/usr/bin/env bash
# Runs one stage of CI and records how long it took.
#
# Usage: scripts/stage.sh NAME COMMAND [ARG...]
#
# Without CI_STAGES in the environment it only runs COMMAND. With it, it
# appends "NAME<TAB>SECONDS<TAB>EXIT STATUS" to that file and keeps
# COMMAND's output (stdout and stderr, still shown) in CI_STAGES.NAME.log,
# from which scripts/stage-report.py reads each test binary's time.
# Exits with COMMAND's status.
set -uo pipefail

name=$1
shift
if [ -z "${CI_STAGES:-}" ]; then
  exec "$@"
fi
start=$(date +%s.%N)
"$@" 2>&1 | tee "$CI_STAGES.$name.log"
status=${PIPESTATUS[0]}
end=$(date +%s.%N)
awk -v n="$name" -v a="$start" -v b="$end" -v s="$status" \
  'BEGIN { printf "%s\t%.1f\t%s\n", n, b - a, s }' >>"$CI_STAGES"
exit "$status"
