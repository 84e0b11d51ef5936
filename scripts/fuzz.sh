#!/usr/bin/env bash
# Runs the coverage-guided fuzz targets of fuzz/ (cargo-fuzz, libFuzzer),
# one after another, each for FUZZ_SECS seconds (default 600).
#
# Each run starts from the kept corpus fuzz/corpus/TARGET; what it finds
# goes to a scratch corpus, and with FUZZ_MERGE=1 the inputs that add
# coverage are merged into the kept corpus afterwards (then minimise it
# with `cargo fuzz cmin TARGET` before committing). A failing input is
# saved under fuzz/artifacts/TARGET/ and fails the script. At the end a
# table gives, per target: seconds, executions, corpus size and coverage
# (libFuzzer's cov and ft).
#
# Installs cargo-fuzz (pinned) when it is missing; with CI=true a fuzzer
# that cannot be installed is a failure, not a skip.
#
# Usage: scripts/fuzz.sh [TARGET...]   (default: every target)
# Environment: FUZZ_SECS, FUZZ_MERGE, CARGO.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_FUZZ_VERSION=0.13.2
secs=${FUZZ_SECS:-600}
cargo=${CARGO:-cargo}

fail_or_skip() {
  if [ "${CI:-}" = "true" ]; then
    echo "fuzz: $1" >&2
    exit 1
  fi
  echo "fuzz: $1; skipping the fuzz run (set CI=true to make this fatal)" >&2
  exit 0
}

if ! $cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz $CARGO_FUZZ_VERSION" >&2
  $cargo install --locked "cargo-fuzz@$CARGO_FUZZ_VERSION" >&2 ||
    fail_or_skip "cannot install cargo-fuzz $CARGO_FUZZ_VERSION"
fi

# The pinned toolchain builds the targets: without a sanitizer the
# coverage instrumentation needs only stable flags.
fuzz=($cargo fuzz)

# No sanitizer: the project forbids unsafe code, and without ASan's
# overhead each second tries about twice the inputs. One target dir with
# the workspace's: the fuzz build lands under target/<triple>/.
build=(--sanitizer none --target-dir "$PWD/target")

if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <("${fuzz[@]}" list)
fi

"${fuzz[@]}" build "${build[@]}"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
summary=()
for target in "${targets[@]}"; do
  kept=fuzz/corpus/$target
  found=$scratch/$target
  mkdir -p "$kept" "$found" "fuzz/artifacts/$target"
  log=$scratch/$target.log
  dict=()
  [ -f "fuzz/dict/$target.dict" ] && dict=("-dict=fuzz/dict/$target.dict")
  echo "== fuzz $target for ${secs}s" >&2
  start=$(date +%s)
  status=0
  "${fuzz[@]}" run "${build[@]}" "$target" "$found" "$kept" -- \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    "${dict[@]}" >"$log" 2>&1 || status=$?
  took=$(($(date +%s) - start))
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$log" >&2
    echo "fuzz: $target FAILED (exit $status); the input is under fuzz/artifacts/$target/" >&2
    exit 1
  fi
  done_line=$(grep -E '^#[0-9]+\s+DONE' "$log" | tail -n 1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$done_line")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$done_line")
  corp=$(sed -nE 's/.* corp: ([0-9]+)\/.*/\1/p' <<<"$done_line")
  row="| $target | $took | $execs | $corp | $cov | $ft | 0 |"
  summary+=("$row")
  # Said at once: a later target's failure must not lose this one's figures.
  echo "fuzz: $row" >&2
  if [ "${FUZZ_MERGE:-0}" = "1" ]; then
    "${fuzz[@]}" run "${build[@]}" "$target" "$kept" "$found" -- -merge=1 >"$log.merge" 2>&1 ||
      { tail -n 20 "$log.merge" >&2; exit 1; }
  fi
done

echo
echo "| target | seconds | executions | corpus | cov | ft | failures |"
echo "|---|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${summary[@]}"
