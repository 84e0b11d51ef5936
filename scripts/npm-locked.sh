#!/usr/bin/env bash
# Makes DIR's node_modules what the committed npm project LOCKED pins: when
# a dependency of LOCKED/package.json is missing from DIR, or there at
# another version, copies LOCKED's package.json and package-lock.json into
# DIR and runs `npm ci` there (every package down the tree from the lock
# file, nothing resolved), then checks again. The versions live in LOCKED
# only. Exits 0 when DIR holds them, 1 when they could not be installed
# (needs node, npm and the registry). Callers decide whether that fails.
# Usage: scripts/npm-locked.sh LOCKED DIR
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: scripts/npm-locked.sh LOCKED DIR" >&2; exit 2; }
locked=$(cd "$1" && pwd)
mkdir -p "$2"
dir=$(cd "$2" && pwd)

# Whether every dependency of LOCKED/package.json is in DIR at its version.
installed() {
  node -e '
    const [locked, dir] = process.argv.slice(1);
    const deps = require(locked + "/package.json").dependencies;
    for (const [name, version] of Object.entries(deps)) {
      let found;
      try {
        found = require(dir + "/node_modules/" + name + "/package.json").version;
      } catch {
        process.exit(1);
      }
      if (found !== version) process.exit(1);
    }' "$locked" "$dir" 2>/dev/null
}

installed && exit 0
echo "npm: installing $1 into $2 (npm ci from its lock file)" >&2
cp "$locked/package.json" "$locked/package-lock.json" "$dir/"
npm ci --prefix "$dir" --no-audit --no-fund --silent >/dev/null || exit 1
installed
