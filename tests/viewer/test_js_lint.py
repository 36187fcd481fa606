"""The browser's scripts pass ESLint: collation/viewer/static/*.js (not vendor/), with the flat config
of tools/eslint (browser globals, classic scripts, and rules that refuse copies of what the server
gives the pages). ESLint is the pinned one of tools/eslint/package-lock.json, installed by
scripts/setup.sh (``npm ci``, which checks each package's sha512); the test skips only when node or
that install is absent."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools" / "eslint"
ESLINT = TOOLS / "node_modules" / "eslint" / "bin" / "eslint.js"
STATIC = REPO / "collation" / "viewer" / "static"


def scripts() -> list[Path]:
    return sorted(STATIC.glob("*.js"))


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed (scripts/setup.sh installs ESLint with npm when it is)")
    if not ESLINT.is_file():
        pytest.skip("ESLint is not installed: run scripts/setup.sh (npm ci in tools/eslint)")
    return found


def test_the_installed_eslint_is_the_pinned_one(node: str) -> None:
    pinned = json.loads((TOOLS / "package.json").read_text())["devDependencies"]
    locked = json.loads((TOOLS / "package-lock.json").read_text())["packages"]
    for name, version in pinned.items():
        assert version[0].isdigit(), f"{name} is pinned to an exact version, not {version!r}"
        entry = locked[f"node_modules/{name}"]
        assert entry["version"] == version and entry["integrity"].startswith("sha512-")
        installed = json.loads((TOOLS / "node_modules" / name / "package.json").read_text())["version"]
        assert installed == version, f"{name} {installed} is installed, {version} is pinned: run scripts/setup.sh"


def test_the_viewer_scripts_pass_eslint(node: str) -> None:
    files = scripts()
    assert {p.name for p in files} >= {"common.js", "viewer.js", "workspace.js", "concordance.js", "keys.js"}
    run = subprocess.run(
        [
            node,
            str(ESLINT),
            "--config",
            str(TOOLS / "eslint.config.mjs"),
            "--max-warnings",
            "0",
            "--format",
            "json",
            *(str(p.relative_to(REPO)) for p in files),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode in (0, 1), run.stderr  # 2: ESLint itself failed (config, install)
    results = json.loads(run.stdout)
    assert sorted(Path(r["filePath"]).name for r in results) == [p.name for p in files]  # none left out
    problems = [
        f"{Path(r['filePath']).name}:{m.get('line')}:{m.get('column')} {m['message']} ({m.get('ruleId')})"
        for r in results
        for m in r["messages"]
    ]
    assert problems == [] and run.returncode == 0, "\n".join(problems)


def test_the_lint_refuses_what_the_server_gives(node: str, tmp_path: Path) -> None:
    """The config's guard against copies works: a script that keeps a token, builds the Bearer header, an
    Image API request and a status string of its own fails, as does one that uses an undeclared global."""
    bad = tmp_path / "copy.js"
    bad.write_text(
        "(function () {\n  'use strict';\n"
        "  var t = window.localStorage.getItem('collation.token');\n"
        "  var h = { Authorization: 'Bearer ' + t };\n"
        "  var src = t + '/full/!700,700/0/default.jpg';\n"
        "  if (h && src && document.title === 'finished') undeclared();\n"
        "})();\n"
    )
    run = subprocess.run(
        [node, str(ESLINT), "--config", str(TOOLS / "eslint.config.mjs"), "--format", "json", str(bad)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    rules = sorted({m["ruleId"] for r in json.loads(run.stdout) for m in r["messages"]})
    assert run.returncode == 1 and rules == ["no-restricted-properties", "no-restricted-syntax", "no-undef"], rules
