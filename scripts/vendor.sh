#!/usr/bin/env bash
# The browser libraries the pages load, from the npm registry, served by the service itself (no CDN at
# run time): files of a pinned package version, each checked against its pinned sha256, written into
# collation/viewer/static/vendor (git-ignored). scripts/setup.sh runs it for a checkout; the Dockerfile
# runs it with --require, in a stage of its own, for the image: the pins live here only.
#
#   scripts/vendor.sh            skips (with a message) what npm cannot fetch: the pages and tests say so
#   scripts/vendor.sh --require  fails when a file is missing or its checksum differs (an image build)
#
# Files already there with their checksums are kept. npm's own settings apply (a registry mirror with
# NPM_CONFIG_REGISTRY, a proxy's CA with NPM_CONFIG_CAFILE).
set -euo pipefail
cd "$(dirname "$0")/.."

REQUIRE=0
[ "${1:-}" = --require ] && REQUIRE=1
VENDOR=collation/viewer/static/vendor
failed=()

vendor_ok() { # FILE SHA256: the file is there with its pinned checksum
    [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

# npm_vendor SPEC TARBALL [PATH DEST SHA256]...: `npm pack SPEC` (which writes TARBALL), then each
# package/PATH to DEST when its checksum is SHA256; fails, leaving no DEST of a bad checksum, otherwise.
npm_vendor() {
    local spec=$1 tarball=$2 pack_dir ok=0
    shift 2
    mkdir -p "$VENDOR"
    pack_dir=$(mktemp -d)
    (cd "$pack_dir" && npm pack --silent "$spec" >/dev/null 2>&1) || ok=1
    while [ "$#" -ge 3 ]; do
        if [ "$ok" = 0 ] && tar xzf "$pack_dir/$tarball" -O "package/$1" >"$2.tmp" && vendor_ok "$2.tmp" "$3"; then
            mv "$2.tmp" "$2"
        else
            rm -f "$2.tmp"
            ok=1
        fi
        shift 3
    done
    rm -rf "$pack_dir"
    return "$ok"
}

# Mirador for the collation viewer (collation/viewer): the self-contained UMD bundle of each pinned
# version. Apache-2.0.
declare -A MIRADOR_SHA256=(
    [4.0.0]=86109137e947117095f44b800c69b27c0e0ac5ef41e0a354839f33e761cec0e3
    [3.4.3]=43caefc0eb119c8152e573a028c78c8b8a0497da20055358104c273fe2b98eac
)
for version in "${!MIRADOR_SHA256[@]}"; do
    vendor_ok "$VENDOR/mirador-$version.min.js" "${MIRADOR_SHA256[$version]}" && continue
    if ! command -v npm >/dev/null 2>&1; then
        echo "vendor: npm not found, Mirador $version not installed; the viewer page will say so" >&2
        failed+=("mirador@$version")
    elif npm_vendor "mirador@$version" "mirador-$version.tgz" \
        dist/mirador.min.js "$VENDOR/mirador-$version.min.js" "${MIRADOR_SHA256[$version]}"
    then
        echo "vendor: installed Mirador $version" >&2
    else
        echo "vendor: could not fetch Mirador $version from npm (or its checksum differs); viewer tests will skip" >&2
        failed+=("mirador@$version")
    fi
done

# Annotorious for the region editor of the New collation page (static/review.js): the browser build
# (UMD, window.Annotorious) and its stylesheet. BSD-3-Clause.
ANNOTORIOUS_VERSION=3.8.10
ANNOTORIOUS_JS=(dist/annotorious.js "$VENDOR/annotorious-$ANNOTORIOUS_VERSION.js"
    21fe8846ed69296d7dae41db9ad5b6931d8cbb69eed93b003dbe816a8b123b42)
ANNOTORIOUS_CSS=(dist/annotorious.css "$VENDOR/annotorious-$ANNOTORIOUS_VERSION.css"
    6fa6a0f184e21f7d29d5d5390db21d54d9b77201301fd4c5e1e961ae8c7eb27f)
if vendor_ok "${ANNOTORIOUS_JS[1]}" "${ANNOTORIOUS_JS[2]}" && vendor_ok "${ANNOTORIOUS_CSS[1]}" "${ANNOTORIOUS_CSS[2]}"; then
    :
elif ! command -v npm >/dev/null 2>&1; then
    echo "vendor: npm not found, Annotorious not installed; the region editor will say so" >&2
    failed+=("@annotorious/annotorious@$ANNOTORIOUS_VERSION")
elif npm_vendor "@annotorious/annotorious@$ANNOTORIOUS_VERSION" "annotorious-annotorious-$ANNOTORIOUS_VERSION.tgz" \
    "${ANNOTORIOUS_JS[@]}" "${ANNOTORIOUS_CSS[@]}"
then
    echo "vendor: installed Annotorious $ANNOTORIOUS_VERSION" >&2
else
    rm -f "${ANNOTORIOUS_JS[1]}" "${ANNOTORIOUS_CSS[1]}" # both or neither: the page loads them together
    echo "vendor: could not fetch Annotorious $ANNOTORIOUS_VERSION from npm (or a checksum differs)" >&2
    failed+=("@annotorious/annotorious@$ANNOTORIOUS_VERSION")
fi

if [ "$REQUIRE" = 1 ] && [ ${#failed[@]} -gt 0 ]; then
    echo "vendor: missing ${failed[*]}" >&2
    exit 1
fi
