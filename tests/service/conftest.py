"""Fixtures of the service tests: a real Redis on a private port, a loopback static server with
synthetic manuscripts (and a mirrored copy of one), the app with its test client, in-process and subprocess workers.

The Physiologus fixtures (``physiologus``, ``iipsrv``: iipsrv behind lighttpd serving the folios)
come from ``tests/conftest.py``, shared with the IIIF tests. Nothing here reaches a server
these fixtures did not start.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from PIL import Image, ImageDraw
from redis import Redis
from service_helpers import REPO, OpenAPIClient, WorkerProcesses, drain, service_settings

from collation.app import create_app
from collation.cli.private_servers import start_redis, stop
from collation.core.settings import Settings
from collation.service.state import service_state

# --------------------------------------------------------------------------------------------------
# Redis


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[subprocess.Popen, str]]:
    """A private redis-server (no persistence) for the whole session."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; scripts/setup.sh does it)")
    process, url = start_redis(tmp_path_factory.mktemp("redis"))
    yield process, url
    stop(process)


@pytest.fixture
def redis_url(redis_server: tuple[subprocess.Popen, str]) -> Iterator[str]:
    """The session's Redis, emptied before the test."""
    url = redis_server[1]
    client = Redis.from_url(url)
    client.flushdb()
    client.close()
    yield url


# --------------------------------------------------------------------------------------------------
# A loopback static server


@dataclass
class Site:
    root: Path
    url: str

    def write_json(self, relative: str, doc: Any) -> str:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc))
        return f"{self.url}/{relative}"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_header(self, keyword: str, value: str) -> None:
        # http.server writes "Content-type"; the Fetcher (collation.net.http, headers copied into a
        # plain dict) only reads "Content-Type". Reported to the IIIF layer's author.
        super().send_header("Content-Type" if keyword.lower() == "content-type" else keyword, value)


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("site")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(root)))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield Site(root, f"http://127.0.0.1:{httpd.server_address[1]}")
    httpd.shutdown()
    httpd.server_close()


# --------------------------------------------------------------------------------------------------
# Synthetic manuscripts: the same drawings, in the same order, on differently laid out folios


def drawing(k: int, size: tuple[int, int] = (200, 150)) -> Image.Image:
    """Illustration k: random shapes on a light ground, the same for a given k."""
    rng = np.random.default_rng(1000 + k)
    image = Image.new("RGB", size, (235, 225, 205))
    draw = ImageDraw.Draw(image)
    for _ in range(12):
        x0, y0 = rng.integers(0, size[0] - 20), rng.integers(0, size[1] - 20)
        x1, y1 = x0 + rng.integers(15, 90), y0 + rng.integers(15, 70)
        color = tuple(int(c) for c in rng.integers(0, 200, 3))
        if rng.random() < 0.5:
            draw.ellipse((x0, y0, x1, y1), fill=color)
        else:
            draw.rectangle((x0, y0, x1, y1), outline=color, width=int(rng.integers(2, 8)))
    return image


def v3_manifest(url: str, label: str, canvases: list[dict]) -> dict:
    return {
        "@context": "http://iiif.io/api/presentation/3/context.json",
        "id": url,
        "type": "Manifest",
        "label": {"en": [label]},
        "items": canvases,
    }


def v3_canvas(canvas_id: str, size: tuple[int, int], image_url: str, boxes: list[tuple[int, int, int, int]]) -> dict:
    body = {"id": image_url, "type": "Image", "format": "image/jpeg", "width": size[0], "height": size[1]}
    canvas = {
        "id": canvas_id,
        "type": "Canvas",
        "label": {"none": [canvas_id.rsplit("/", 1)[-1]]},
        "width": size[0],
        "height": size[1],
        "items": [
            {
                "id": f"{canvas_id}/page",
                "type": "AnnotationPage",
                "items": [
                    {
                        "id": f"{canvas_id}/painting",
                        "type": "Annotation",
                        "motivation": "painting",
                        "body": body,
                        "target": canvas_id,
                    }
                ],
            }
        ],
    }
    if boxes:
        canvas["annotations"] = [
            {
                "id": f"{canvas_id}/regions",
                "type": "AnnotationPage",
                "items": [
                    {
                        "id": f"{canvas_id}/region/{n}",
                        "type": "Annotation",
                        "motivation": "tagging",
                        "body": {"type": "TextualBody", "value": "illustration", "purpose": "tagging"},
                        "target": f"{canvas_id}#xywh={x},{y},{w},{h}",
                    }
                    for n, (x, y, w, h) in enumerate(boxes)
                ],
            }
        ]
    return canvas


def v2_manifest(url: str, label: str, canvases: list[dict]) -> dict:
    return {
        "@context": "http://iiif.io/api/presentation/2/context.json",
        "@id": url,
        "@type": "sc:Manifest",
        "label": label,
        "sequences": [{"@type": "sc:Sequence", "canvases": canvases}],
    }


def v2_canvas(
    canvas_id: str,
    size: tuple[int, int],
    image_url: str | None = None,
    service: str | None = None,
    image_size: tuple[int, int] | None = None,
    other_content: list | None = None,
) -> dict:
    resource: dict[str, Any] = {
        "@id": image_url or f"{service}/full/full/0/default.jpg",
        "@type": "dctypes:Image",
        "format": "image/jpeg",
    }
    width, height = image_size or size
    resource.update(width=width, height=height)
    if service:
        resource["service"] = {
            "@context": "http://iiif.io/api/image/2/context.json",
            "@id": service,
            "profile": "http://iiif.io/api/image/2/level1.json",
        }
    canvas = {
        "@id": canvas_id,
        "@type": "sc:Canvas",
        "label": canvas_id.rsplit("/", 1)[-1],
        "width": size[0],
        "height": size[1],
        "images": [{"@type": "oa:Annotation", "motivation": "sc:painting", "resource": resource, "on": canvas_id}],
    }
    if other_content is not None:
        canvas["otherContent"] = other_content
    return canvas


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
def synthetic(site: Site) -> Synthetic:
    """Three manuscripts of the same ``n`` drawings in the same order (A: 3.0 with tagging
    annotations; B: 2.1 without annotations, its regions given in the request; C: 3.0, two drawings
    per folio) and a manifest URL that answers 404."""
    n = 4
    layouts = {"A": (1, (30, 40), 1.0), "B": (1, (60, 20), 0.9), "C": (2, (20, 30), 1.1)}
    urls, b_regions = {}, []
    for name, (per_folio, (dx, dy), scale) in layouts.items():
        canvases = []
        for f in range((n + per_folio - 1) // per_folio):
            folio = Image.new("RGB", (420, 600), (250, 245, 235))
            boxes = []
            for s, k in enumerate(range(f * per_folio, min(n, (f + 1) * per_folio))):
                art = drawing(k)
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
                canvases.append(v2_canvas(canvas_id, folio.size, image_url=image_url))
                b_regions += [{"canvas": canvas_id, "xywh": list(box)} for box in boxes]
            else:
                canvases.append(v3_canvas(canvas_id, folio.size, image_url, boxes))
        url = f"{site.url}/{name}/manifest.json"
        doc = (v2_manifest if name == "B" else v3_manifest)(url, f"Manuscript {name}", canvases)
        urls[name] = site.write_json(f"{name}/manifest.json", doc)
        if name == "A":  # the same manuscript with the image of its third folio missing
            broken = json.loads(json.dumps(doc).replace(f"{site.url}/A/f2.jpg", f"{site.url}/A/gone.jpg"))
            urls["partial"] = site.write_json("A/partial.json", {**broken, "id": f"{site.url}/A/partial.json"})
    return Synthetic(
        urls["A"], urls["B"], urls["C"], f"{site.url}/missing/manifest.json", urls["partial"], b_regions, n
    )


@pytest.fixture(scope="session")
def mirrored(site: Any, synthetic: Any) -> str:
    """Manuscript A with every illustration mirrored in place on its folio (the same manifest otherwise)."""
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
# App, client, workers


@pytest.fixture
def settings(tmp_path: Path, redis_url: str) -> Settings:
    """The test's settings, from no environment at all (the developer's COLLATION_* do not leak in)."""
    return service_settings(tmp_path / "data", redis_url, chunk_pairs=6)


@pytest.fixture
def app(settings: Settings) -> Any:
    app = create_app(settings, TESTING=True)
    yield app
    service_state(app).close()


@pytest.fixture
def client(app: Any) -> Any:
    return app.test_client()


@pytest.fixture
def run_jobs(settings: Settings) -> Callable[..., None]:
    return lambda max_jobs=None: drain(settings, max_jobs)


@pytest.fixture
def workers(settings: Settings, tmp_path: Path) -> Iterator[WorkerProcesses]:
    processes = WorkerProcesses(settings, tmp_path)
    yield processes
    processes.stop_all()


# --------------------------------------------------------------------------------------------------
# OpenAPI


@pytest.fixture(scope="session")
def openapi() -> dict[str, Any]:
    return yaml.safe_load((REPO / "openapi.yaml").read_text())


@pytest.fixture
def api(client: Any, openapi: dict[str, Any]) -> OpenAPIClient:
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
