#!/usr/bin/env bash
# `make image`: builds the deepfleet image with podman, without a registry.
#
# deploy/Dockerfile's default path pulls a Rust and a Debian image; this
# script builds its same final stage (labels, user 10001, entrypoint) from
# what the host has instead, given to podman as named build contexts in
# place of the `build` and `base` stages: the release binary (built here,
# or given with --prebuilt), and a base rootfs assembled from the host's
# files (the binary's shared libraries, bubblewrap and its libraries, CA
# certificates, the deepfleet user and its directories), imported as a
# local image. Installs podman and bubblewrap from Debian when missing.
#
# Usage: scripts/image.sh [--prebuilt PATH] [--tag NAME] | --tools
#   --prebuilt PATH  take this binary instead of `cargo build --release`
#   --tag NAME       the image's name (default deepfleet:VERSION)
#   --tools          only install podman and bubblewrap when missing
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
TAG="deepfleet:$VERSION"
PREBUILT=""
TOOLS_ONLY=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prebuilt) PREBUILT=$2; shift 2 ;;
        --tag) TAG=$2; shift 2 ;;
        --tools) TOOLS_ONLY=1; shift ;;
        *) echo "usage: scripts/image.sh [--prebuilt PATH] [--tag NAME] | --tools" >&2; exit 2 ;;
    esac
done

missing=()
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v objcopy >/dev/null 2>&1 || missing+=(binutils)
if [ ${#missing[@]} -gt 0 ]; then
    echo "image: installing ${missing[*]} (Debian packages)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ -z "$TOOLS_ONLY" ] || exit 0

if [ -z "$PREBUILT" ]; then
    ${CARGO:-cargo} build --release --locked --bin deepfleet
    target=$(${CARGO:-cargo} metadata --format-version 1 --no-deps \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
    PREBUILT="$target/release/deepfleet"
fi
[ -x "$PREBUILT" ] || { echo "image: $PREBUILT is not an executable" >&2; exit 1; }

work=$(mktemp -d)
# One base tag per build, so builds running at once never share one.
base="localhost/deepfleet-base:$VERSION-$(basename "$work" | tr -c 'a-zA-Z0-9\n' -)"
cleanup() {
    podman rmi "$base" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

root="$work/rootfs"
mkdir -p "$root"
# The host's merged-/usr links (/lib -> usr/lib, ...), so the libraries
# sit where the binaries' interpreter and search path name them.
for dir in bin sbin lib lib32 lib64 libx32; do
    if [ -L "/$dir" ]; then
        ln -s "$(readlink "/$dir")" "$root/$dir"
        mkdir -p "$root$(readlink -f "/$dir")"
    fi
done

# Copies a host file to the same path in the rootfs: its real path holds
# the file, the path given (when a link) links there.
put() {
    local real alias
    real=$(readlink -f "$1")
    mkdir -p "$root$(dirname "$real")"
    cp -L "$real" "$root$real"
    alias="$(readlink -f "$(dirname "$1")")/$(basename "$1")"
    if [ "$alias" != "$real" ] && [ ! -e "$root$alias" ]; then
        mkdir -p "$root$(dirname "$alias")"
        ln -s "$real" "$root$alias"
    fi
}

# Every shared library `ldd` lists (path after `=>`, or the interpreter).
libraries() {
    ldd "$1" | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^\s*\(\/[^ ]*\) (.*/\1/p'
}

# The sandbox of `execute`: bwrap, prlimit setting its limits and the
# shell that runs the command (sandboxed runs are refused without them).
sandbox_bins=("$(command -v bwrap)" "$(command -v prlimit)" /bin/sh)
for file in $(libraries "$PREBUILT"); do
    put "$file"
done
for bin in "${sandbox_bins[@]}"; do
    for file in $(libraries "$bin"); do
        put "$file"
    done
    put "$bin"
done
put /etc/ssl/certs/ca-certificates.crt

mkdir -p "$root/etc" "$root/usr/local/bin" "$root/var/lib" "$root/proc" "$root/dev" "$root/sys" "$root/run"
install -d -m 1777 "$root/tmp"
cat > "$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/usr/sbin/nologin
deepfleet:x:10001:10001::/var/lib/deepfleet:/usr/sbin/nologin
EOF
cat > "$root/etc/group" <<'EOF'
root:x:0:
deepfleet:x:10001:
EOF
: > "$root/etc/hosts"
: > "$root/etc/resolv.conf"

# Everything root's, then the deepfleet directories 10001's, as the
# base stage's `install -d -o 10001` makes them.
tar --numeric-owner --owner=0 --group=0 -C "$root" -cf "$work/base.tar" .
mkdir -p "$work/home/var/lib/deepfleet/keys"
chmod 0750 "$work/home/var/lib/deepfleet" "$work/home/var/lib/deepfleet/keys"
tar --numeric-owner --owner=10001 --group=10001 --no-recursion -C "$work/home" \
    -rf "$work/base.tar" ./var/lib/deepfleet ./var/lib/deepfleet/keys
podman import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    "$work/base.tar" "$base" >/dev/null

# The stages `build` and `base` replaced by named build contexts (they
# take precedence over stages of the same name, which are then skipped):
# out/deepfleet, and the base image. The main context is not read.
mkdir -p "$work/build/out" "$work/context"
# Shipped stripped, as the Dockerfile's build stage does; the debug info
# and symbols go beside the binary built here, as deepfleet.debug.
objcopy --only-keep-debug "$PREBUILT" "$PREBUILT.debug"
objcopy --strip-all --add-gnu-debuglink="$PREBUILT.debug" "$PREBUILT" "$work/build/out/deepfleet"
chmod 0755 "$work/build/out/deepfleet"
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
# --layers=false: no cached intermediate image of this one-off build
# stays behind.
podman build --quiet --layers=false -f deploy/Dockerfile \
    --build-context build="$work/build" --build-context base="container-image://$base" \
    --build-arg VERSION="$VERSION" --build-arg REVISION="$revision" \
    -t "$TAG" "$work/context" >/dev/null
echo "built $TAG"
