#!/usr/bin/env bash
# Sets up everything the project needs on a fresh Debian machine: system packages (when missing and
# when we may install them) and a virtual environment at .venv with the `collate` command.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(redis-server iipimage-server lighttpd libvips-tools chromium prometheus)  # prometheus: the dashboard test

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        SUDO=""
    elif command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        SUDO="none"
    fi
    if [ "$SUDO" = none ]; then
        echo "setup: cannot install ${missing[*]} (not root, no sudo); tests that need them will skip" >&2
    else
        echo "setup: installing ${missing[*]}" >&2
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'

# ---------------------------------------------------------------------------------------------------
# Browser libraries from the npm registry, served by the service itself (no CDN at run time): files of
# a pinned package version, each checked against its pinned sha256. Skipped when the files are there
# with their checksums; skipped with a message when npm is absent (the pages and tests say so).
VENDOR=collation/viewer/static/vendor

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
        echo "setup: npm not found, Mirador $version not installed; the viewer page will say so" >&2
    elif npm_vendor "mirador@$version" "mirador-$version.tgz" \
        dist/mirador.min.js "$VENDOR/mirador-$version.min.js" "${MIRADOR_SHA256[$version]}"
    then
        echo "setup: installed Mirador $version" >&2
    else
        echo "setup: could not fetch Mirador $version from npm (or its checksum differs); viewer tests will skip" >&2
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
    echo "setup: npm not found, Annotorious not installed; the region editor will say so" >&2
elif npm_vendor "@annotorious/annotorious@$ANNOTORIOUS_VERSION" "annotorious-annotorious-$ANNOTORIOUS_VERSION.tgz" \
    "${ANNOTORIOUS_JS[@]}" "${ANNOTORIOUS_CSS[@]}"
then
    echo "setup: installed Annotorious $ANNOTORIOUS_VERSION" >&2
else
    rm -f "${ANNOTORIOUS_JS[1]}" "${ANNOTORIOUS_CSS[1]}" # both or neither: the page loads them together
    echo "setup: could not fetch Annotorious $ANNOTORIOUS_VERSION from npm (or a checksum differs)" >&2
fi

# ---------------------------------------------------------------------------------------------------
# ESLint for the viewer's browser scripts (tests/viewer/test_js_lint.py): the exact versions pinned in
# tools/eslint/package.json, installed by `npm ci` from the committed tools/eslint/package-lock.json,
# which checks every package against its sha512 integrity there; from the npm registry only (no CDN),
# into tools/eslint/node_modules (ignored by git). Skipped when the pinned versions are installed;
# skipped with a message when npm is absent or the install fails (the lint test then skips).
ESLINT_DIR=tools/eslint
eslint_ok() {
    command -v node >/dev/null 2>&1 && node -e '
        const dir = process.argv[1];
        const pinned = require(dir + "/package.json").devDependencies;
        for (const [name, version] of Object.entries(pinned)) {
            if (require(dir + "/node_modules/" + name + "/package.json").version !== version) process.exit(1);
        }' "$PWD/$ESLINT_DIR" >/dev/null 2>&1
}
if eslint_ok; then
    :
elif ! command -v npm >/dev/null 2>&1; then
    echo "setup: npm not found, ESLint not installed; the JavaScript lint test will skip" >&2
elif npm ci --prefix "$ESLINT_DIR" --engine-strict --ignore-scripts --no-audit --no-fund --silent >/dev/null 2>&1 &&
    eslint_ok
then
    echo "setup: installed ESLint $(node -p 'require("./'"$ESLINT_DIR"'/package.json").devDependencies.eslint')" >&2
else
    echo "setup: could not install ESLint with npm ci in $ESLINT_DIR (npm registry, Node.js ^20.19 or newer); the JavaScript lint test will skip" >&2
fi
