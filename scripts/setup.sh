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
# Browser libraries from the npm registry (Mirador, Annotorious), each file checked against its pinned
# sha256: scripts/vendor.sh, which the Dockerfile runs too. Skipped with a message when npm is absent.
scripts/vendor.sh

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
