#!/usr/bin/env bash
# Prepares what the Agent Chat UI end-to-end test (tests/e2e/chat_ui.rs)
# runs, each step skipped when already done:
#   - Debian's chromium (apt-get, as root) unless `app` is given;
#   - the Agent Chat UI: scaffolded by create-agent-chat-app from the npm
#     registry, its web app installed from the committed lockfile, patched
#     (tests/e2e/chat_ui/app/ui.patch: no Google Fonts at build time, and
#     langchain v1's human in the loop) and built with `next build`,
#     into target/chat-ui/app;
#   - puppeteer-core for the driver, from the lock file of
#     tests/e2e/chat_ui/driver/, into target/chat-ui/driver.
# Under CI=true anything missing or failing fails the run; elsewhere it is
# skipped with a note and the test skips too.
# Usage: scripts/chat-ui.sh [app]
set -euo pipefail
cd "$(dirname "$0")/.."

SCAFFOLD=create-agent-chat-app@0.1.6
FILES=tests/e2e/chat_ui/app
DIR=target/chat-ui

fail() {
  if [ "${CI:-}" = "true" ]; then
    echo "chat-ui: FAIL: $1 (needed under CI=true)" >&2
    exit 1
  fi
  echo "chat-ui: SKIP: $1; the Agent Chat UI test will skip (set CI=true to make this fatal)" >&2
  exit 0
}

if [ "${1:-}" != app ] && ! command -v chromium >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
    || fail "chromium is not installed (apt-get install chromium, as root)"
  echo "chat-ui: installing chromium" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null \
    || fail "apt-get could not install chromium"
fi

command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 \
  || fail "node and npm are not installed (Node 20 or later)"

# What the built app is made of; a change to any of it rebuilds.
stamp=$( { echo "$SCAFFOLD"; cat "$FILES"/*; } | sha256sum | cut -d' ' -f1)
if [ "$(cat "$DIR/app/.stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "chat-ui: scaffolding $SCAFFOLD and building it into $DIR/app" >&2
  rm -rf "$DIR/app" "$DIR/scaffold"
  mkdir -p "$DIR/scaffold"
  (cd "$DIR/scaffold" && npx --yes "$SCAFFOLD" -Y --project-name chat --package-manager npm \
    --install-deps false --framework nextjs --include-agent none) >/dev/null \
    || fail "npx could not scaffold $SCAFFOLD"
  # Only the web app: the template's own agents and their dev server are
  # not what it talks to here (the lockfile leaves out those packages).
  mv "$DIR/scaffold/chat/apps/web" "$DIR/app"
  rm -rf "$DIR/scaffold"
  (cd "$DIR/app" && node -e '
    const fs = require("fs");
    const p = JSON.parse(fs.readFileSync("package.json"));
    delete p.dependencies["@langchain/langgraph-api"];
    delete p.dependencies["@langchain/langgraph-cli"];
    fs.writeFileSync("package.json", JSON.stringify(p, null, 2));')
  cp "$FILES/package-lock.json" "$DIR/app/"
  cp "$FILES/langchain-v1-hitl.ts" "$DIR/app/src/lib/"
  patch -s -p1 -d "$DIR/app" <"$FILES/ui.patch" || fail "ui.patch does not apply to $SCAFFOLD"
  (cd "$DIR/app" && npm ci --no-audit --no-fund --silent) >/dev/null \
    || fail "npm could not install the Agent Chat UI's packages"
  (cd "$DIR/app" && NEXT_TELEMETRY_DISABLED=1 npx next build) >"$DIR/build.log" 2>&1 \
    || fail "next build failed (see $DIR/build.log)"
  echo "$stamp" >"$DIR/app/.stamp"
fi

scripts/npm-locked.sh tests/e2e/chat_ui/driver "$DIR/driver" \
  || fail "npm could not install the driver of tests/e2e/chat_ui/driver"
