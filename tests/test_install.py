"""The project installed as the image installs it: built as a wheel (not editable) into a fresh virtual
environment, where the Dockerfile's own check step passes and ``collate serve`` answers every page,
every static file, both Mirador bundles and the region editor's Annotorious with 200, and the image's
health check (``collate health``) asks the port ``serve --port`` was given.

The environment borrows the dependencies of the running one (a ``.pth`` naming its site-packages, whose
own ``.pth`` files, the editable install among them, are not read): only the project itself is built
and installed, so the test stays a few seconds. The source is copied as the image's build copies it
(``pyproject.toml``, ``README.md``, ``collation/`` with the vendored bundles scripts/setup.sh fetched)."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from builders import record
from service_helpers import REPO, wait_for

VENDOR = ("mirador-4.0.0.min.js", "mirador-3.4.3.min.js", "annotorious-3.8.10.js", "annotorious-3.8.10.css")
"""The browser libraries of scripts/vendor.sh: the viewer's two Mirador bundles, the region editor's."""

NO_DOWNLOADS = ("--no-deps", "--no-build-isolation", "--no-index", "--no-cache-dir")
"""pip builds and installs the project alone, with the setuptools and dependencies already here."""

pytestmark = pytest.mark.stack  # `collate serve` starts its private redis-server


def dockerfile_check_step(dockerfile: str) -> str:
    """The shell command of the Dockerfile's check step: the ``RUN`` after the comment that opens with
    "The image's checks", its continued lines joined."""
    lines = dockerfile.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# The image's checks"))
    run = next(i for i in range(start, len(lines)) if lines[i].startswith("RUN "))
    command = [lines[run].removeprefix("RUN ")]
    while command[-1].endswith("\\"):
        run += 1
        command.append(lines[run])
    return "\n".join(command)


def test_the_check_step_is_found_and_runs_the_installed_package() -> None:
    step = dockerfile_check_step((REPO / "Dockerfile").read_text())
    assert step.startswith('python -P -c "from collation.engine.backbones import load_backbone;')
    assert "find collation/viewer/templates collation/viewer/static -type f" in step and step.endswith("done")


def copy_source(target: Path) -> Path:
    """What the image's build copies, without caches (.dockerignore)."""
    target.mkdir()
    for name in ("pyproject.toml", "README.md", "openapi.yaml"):
        shutil.copy2(REPO / name, target / name)
    shutil.copytree(REPO / "collation", target / "collation", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target


def fresh_venv(folder: Path) -> Path:
    """A virtual environment with no pip of its own, seeing this one's packages; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=60)
    python = folder / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    borrowed = [p for p in sys.path if p.endswith("site-packages")]
    (Path(site) / "_borrowed.pth").write_text("\n".join(borrowed) + "\n")
    return python


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(the fresh environment's bin folder, the source folder it was built from)."""
    missing = [name for name in VENDOR if not (REPO / "collation/viewer/static/vendor" / name).is_file()]
    if missing:
        pytest.skip(f"{missing[0]} is not installed (scripts/setup.sh fetches it from npm)")
    work = tmp_path_factory.mktemp("install")
    source = copy_source(work / "src")
    python = fresh_venv(work / "venv")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", *NO_DOWNLOADS, str(source)],
        check=True,
        cwd=work,
        timeout=300,
    )
    yield python.parent, source


def test_the_package_is_installed_not_linked(installed: tuple[Path, Path], tmp_path: Path) -> None:
    bin_dir, _ = installed
    where = subprocess.run(
        [str(bin_dir / "python"), "-c", "import collation; print(collation.__file__)"],
        cwd=tmp_path,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert where.startswith(str(bin_dir.parent / "lib")) and "site-packages" in where, where


def test_the_dockerfiles_checks_pass_in_the_installed_package(installed: tuple[Path, Path]) -> None:
    bin_dir, source = installed
    step = dockerfile_check_step((REPO / "Dockerfile").read_text())
    done = subprocess.run(
        ["sh", "-c", step],
        cwd=source,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(source)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def local_links(html: str) -> set[str]:
    """The scripts and stylesheets a page loads from the service (``src``/``href`` of ``script``/``link``)."""
    tags = re.findall(r"<(?:script|link)\b[^>]*>", html)
    return {m for tag in tags for m in re.findall(r'(?:src|href)="(/[^"]*)"', tag)}


def test_serve_answers_every_page_static_file_and_bundle(installed: tuple[Path, Path], tmp_path: Path) -> None:
    bin_dir, source = installed
    from collation.store.folder import FolderStore

    data = tmp_path / "data"
    cid = "0123456789abcdef"
    FolderStore(data).create_collation(record(3, cid=cid, status="finished"))
    port, unused = free_port(), free_port()
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "COLLATION_DATA_DIR": str(data),
        "COLLATION_OPENAPI_PATH": str(source / "openapi.yaml"),  # as the Dockerfile sets it
        "COLLATION_PORT": str(unused),  # overridden by --port: the health check must not ask this one
    }
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        serve = subprocess.Popen(
            [str(bin_dir / "collate"), "serve", "--port", str(port), "--workers", "0"],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )

    def health() -> subprocess.CompletedProcess:
        return subprocess.run([str(bin_dir / "collate"), "health"], env=env, capture_output=True, text=True)

    def address() -> str | None:
        assert serve.poll() is None, log.read_text()[-3000:]
        found = re.search(r"on (http://\S+)/ ", log.read_text())
        return found[1] if found else None

    try:
        root = wait_for(address, 120, "collate serve to listen")
        assert root == f"http://127.0.0.1:{port}"
        pages = {
            "/": (),
            "/new": ("vendor/annotorious-3.8.10.js",),
            f"/collations/{cid}": ("vendor/annotorious-3.8.10.js",),
            f"/api/v1/collations/{cid}/view": ("vendor/mirador-4.0.0.min.js",),
            f"/api/v1/collations/{cid}/view?mirador=3": ("vendor/mirador-3.4.3.min.js",),
            f"/api/v1/collations/{cid}/concordance/view": (),
        }
        loaded: set[str] = set()
        for path, bundles in pages.items():
            page = requests.get(root + path, timeout=30)
            assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html"), path
            links = local_links(page.text)
            assert all(any(link.endswith(bundle) for link in links) for bundle in bundles), (path, links)
            loaded |= links
        for link in sorted(loaded):
            assert requests.get(root + link, timeout=30).status_code == 200, link

        static = source / "collation/viewer/static"
        files = sorted(p.relative_to(static).as_posix() for p in static.rglob("*") if p.is_file())
        assert {f"vendor/{name}" for name in VENDOR} <= set(files) and "workspace.js" in files
        for name in files:
            answer = requests.get(f"{root}/api/v1/viewer/static/{name}", timeout=30)
            assert answer.status_code == 200 and answer.content == (static / name).read_bytes(), name
        assert "/api/v1/viewer/static/vendor/annotorious-3.8.10.css" not in loaded  # review.js loads it
        for path in ("/api/v1/openapi.yaml", "/api/v1/ns/imcol/1/context.json", "/api/v1/healthz"):
            assert requests.get(root + path, timeout=30).status_code == 200, path
        # the image's HEALTHCHECK asks the port serve was started on, which serve recorded
        check = health()
        assert check.returncode == 0 and check.stdout.strip() == f"{root}/api/v1/healthz: 200", check.stderr
    finally:
        serve.terminate()
        serve.wait(60)
    assert serve.returncode == 0 and not any(data.glob(".serve-*.json"))  # a stopped serve leaves no record
    gone = health()  # then COLLATION_PORT, where nothing listens
    assert gone.returncode == 1 and f"http://127.0.0.1:{unused}/api/v1/healthz" in gone.stderr
