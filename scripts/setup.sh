#!/usr/bin/env bash
# Sets up everything the project needs on a fresh Debian machine: system packages (when missing and
# when we may install them) and a virtual environment at .venv with the `collate` command.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(redis-server iipimage-server lighttpd libvips-tools)

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
