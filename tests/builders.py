"""The one builder of each thing the tests make up (tests/conftest.py, the folder conftests and the
test modules all import from here): IIIF Presentation 2.1 and 3.0 manifests, manifests of the
Physiologus folios served by iipsrv, collation records, and loopback HTTP servers (a static one with
scripted routes, and any handler class in a thread). Drawings are in ``tests/synthetic.py``."""

from __future__ import annotations

import json
import mimetypes
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from PIL import Image

P2 = "http://iiif.io/api/presentation/2/context.json"
P3 = "http://iiif.io/api/presentation/3/context.json"
IMAGE2 = "http://iiif.io/api/image/2/context.json"
LEVEL1 = "http://iiif.io/api/image/2/level1.json"

# --------------------------------------------------------------------------------------------------
# Presentation 2.1


def v2_manifest(manifest_id: str, canvases: list[dict[str, Any]], label: Any = "Test manuscript") -> dict[str, Any]:
    return {
        "@context": P2,
        "@id": manifest_id,
        "@type": "sc:Manifest",
        "label": label,
        "sequences": [{"@type": "sc:Sequence", "canvases": canvases}],
    }


def v2_canvas(
    canvas_id: str,
    size: tuple[int, int],
    *,
    service: Any = None,
    image_url: str | None = None,
    image_size: tuple[int, int] | None = None,
    other_content: list[Any] | None = None,
    label: Any = None,
) -> dict[str, Any]:
    """A canvas of ``size`` painted by one image (``image_url``, else ``{canvas_id}/image.jpg``);
    ``service`` is put as given (an object, a list, see ``v2_service``)."""
    resource: dict[str, Any] = {
        "@id": image_url or f"{canvas_id}/image.jpg",
        "@type": "dctypes:Image",
        "format": "image/jpeg",
    }
    if image_size:
        resource["width"], resource["height"] = image_size
    if service is not None:
        resource["service"] = service
    canvas: dict[str, Any] = {
        "@id": canvas_id,
        "@type": "sc:Canvas",
        "label": label or canvas_id.rsplit("/", 1)[-1],
        "width": size[0],
        "height": size[1],
        "images": [{"@type": "oa:Annotation", "motivation": "sc:painting", "resource": resource, "on": canvas_id}],
    }
    if other_content is not None:
        canvas["otherContent"] = other_content
    return canvas


def v2_service(service_id: str, level: int = 1) -> dict[str, Any]:
    return {"@context": IMAGE2, "@id": service_id, "profile": f"http://iiif.io/api/image/2/level{level}.json"}


def v2_tagging_list(list_id: str, annotation_id: str, on: Any) -> dict[str, Any]:
    """An AnnotationList of one ``oa:tagging`` annotation ("illustration") on ``on``."""
    return {
        "@context": P2,
        "@id": list_id,
        "@type": "sc:AnnotationList",
        "resources": [
            {
                "@id": annotation_id,
                "@type": "oa:Annotation",
                "motivation": "oa:tagging",
                "resource": {"@type": "oa:Tag", "chars": "illustration"},
                "on": on,
            }
        ],
    }


# --------------------------------------------------------------------------------------------------
# Presentation 3.0


def v3_manifest(manifest_id: str, canvases: list[dict[str, Any]], label: str = "Test manuscript") -> dict[str, Any]:
    return {"@context": P3, "id": manifest_id, "type": "Manifest", "label": {"en": [label]}, "items": canvases}


def v3_canvas(
    canvas_id: str,
    size: tuple[int, int],
    *,
    body: dict[str, Any],
    annotations: list[Any] | None = None,
    label: str | None = None,
) -> dict[str, Any]:
    canvas: dict[str, Any] = {
        "id": canvas_id,
        "type": "Canvas",
        "label": {"none": [label or canvas_id.rsplit("/", 1)[-1]]},
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
    if annotations is not None:
        canvas["annotations"] = annotations
    return canvas


def v3_image_body(
    url: str, size: tuple[int, int] | None = None, service: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"id": url, "type": "Image", "format": "image/jpeg"}
    if size:
        body["width"], body["height"] = size
    if service is not None:
        body["service"] = service
    return body


def v3_service2(service_id: str, *, keywords: str = "@") -> list[dict[str, Any]]:
    """An ImageService2 (level 1) as a 3.0 body's ``service``: ``@id``/``@type`` (what iipsrv and most
    libraries write) or, with ``keywords=""``, ``id``/``type``."""
    return [{f"{keywords}id": service_id, f"{keywords}type": "ImageService2", "profile": LEVEL1}]


def v3_region_annotation(
    annotation_id: str, target: Any, motivation: str = "tagging", text: str = "illustration"
) -> dict[str, Any]:
    purpose = "tagging" if motivation == "tagging" else "commenting"
    return {
        "id": annotation_id,
        "type": "Annotation",
        "motivation": motivation,
        "body": {"type": "TextualBody", "value": text, "purpose": purpose},
        "target": target,
    }


def v3_tagging_page(page_id: str, canvas_id: str, boxes: list[Any], annotation_ids: list[str]) -> dict[str, Any]:
    """An AnnotationPage tagging each box (``x, y, w, h``) of ``canvas_id`` as an illustration."""
    return {
        "id": page_id,
        "type": "AnnotationPage",
        "items": [
            v3_region_annotation(a, f"{canvas_id}#xywh={x},{y},{w},{h}")
            for a, (x, y, w, h) in zip(annotation_ids, boxes, strict=True)
        ],
    }


def svg_rect_path(x: float, y: float, w: float, h: float) -> str:
    return (
        '<svg xmlns="http://www.w3.org/2000/svg"><path xmlns="http://www.w3.org/2000/svg" '
        f'd="M{x},{y}h{w}v{h}h{-w}z" fill="none" stroke="#00bfff"/></svg>'
    )


# --------------------------------------------------------------------------------------------------
# Manifests of the Physiologus folios (tests/conftest.py's ``iipsrv`` serves them; a static server
# hosts the documents). Both return (manifest, regions): one region per box, in canvas coordinates, as
# the ``regions`` of a request.


def _image_service(box: Any, iipsrv: Any) -> tuple[str, int, int]:
    with Image.open(box.folio) as folio:
        width, height = folio.size
    return f"{iipsrv.base}/{iipsrv.identifiers[box.folio]}", width, height


def physiologus_v2(
    url: str, label: str, boxes: list[Any], iipsrv: Any, *, canvas_scale: int = 1, site: Any = None
) -> tuple[dict, list[dict]]:
    """Presentation 2.1 with ImageService2 services; canvases ``canvas_scale`` times the images (like
    the Vatican's). With ``site``, each canvas's region is also published in an annotation list on it."""
    base = url.rsplit("/", 1)[0]
    canvases, regions = [], []
    for k, box in enumerate(boxes):
        service, width, height = _image_service(box, iipsrv)
        canvas_id = f"{base}/canvas/{box.folio.stem}"
        xywh = [v * canvas_scale for v in box.xywh]
        other_content = None
        if site is not None:
            folder = base.removeprefix(f"{site.url}/")
            on = f"{canvas_id}#xywh={','.join(str(v) for v in xywh)}"
            list_url = site.write_json(
                f"{folder}/list/{k}.json", v2_tagging_list(f"{base}/list/{k}.json", f"{base}/annotation/{k}", on)
            )
            other_content = [{"@id": list_url, "@type": "sc:AnnotationList"}]
        canvas = v2_canvas(
            canvas_id,
            (width * canvas_scale, height * canvas_scale),
            service=v2_service(service),
            image_url=f"{service}/full/full/0/default.jpg",
            image_size=(width, height),
            other_content=other_content,
            label=box.folio.stem.split("_")[3],
        )
        canvases.append(canvas)
        regions.append({"canvas": canvas_id, "xywh": xywh})
    return v2_manifest(url, canvases, label), regions


def physiologus_v3(
    url: str, label: str, boxes: list[Any], iipsrv: Any, *, tagging: bool = False
) -> tuple[dict, list[dict]]:
    """Presentation 3.0 with ImageService2 services (what iipsrv 1.1 offers), canvas = image; with
    ``tagging``, each canvas's region is also an embedded tagging annotation."""
    base = url.rsplit("/", 1)[0]
    canvases, regions = [], []
    for k, box in enumerate(boxes):
        service, width, height = _image_service(box, iipsrv)
        canvas_id = f"{base}/canvas/{box.folio.stem}"
        body = v3_image_body(f"{service}/full/max/0/default.jpg", (width, height), v3_service2(service))
        annotations = None
        if tagging:
            ids = [f"{canvas_id}/illustration/{k}"]
            annotations = [v3_tagging_page(f"{canvas_id}/illustrations", canvas_id, [box.xywh], ids)]
        canvases.append(v3_canvas(canvas_id, (width, height), body=body, annotations=annotations, label=box.folio.stem))
        regions.append({"canvas": canvas_id, "xywh": list(box.xywh)})
    return v3_manifest(url, canvases, label), regions


# --------------------------------------------------------------------------------------------------
# Collation records


RECORD_ID = "0123456789abcdef"


def record(
    manuscripts: int = 2,
    *,
    chunk_pairs: int = 6,
    status: Any = "running",
    options: dict[str, Any] | None = None,
    cid: str = RECORD_ID,
    **fields: Any,
) -> Any:
    """The record (``CollationRecord``) of a collation of ``manuscripts`` manifests (``https://x/{m}.json``)
    as the service writes it (``new_record``, the options resolved), in ``status`` (a string or a
    ``CollationStatus``), with the record's other ``fields`` set."""
    from collation.core.options import CollationOptions
    from collation.core.settings import Settings, WorkerSettings
    from collation.core.vocabulary import CollationStatus
    from collation.store.records import CollationRequest, new_record

    settings = Settings(workers=WorkerSettings(chunk_pairs=chunk_pairs))  # unchecked: a record may hold any count
    request = CollationRequest(tuple(f"https://x/{m}.json" for m in range(manuscripts)))
    rec = new_record(cid, request, CollationOptions.parse(options), settings)
    rec.status = CollationStatus(getattr(status, "value", status))
    for name, value in fields.items():
        setattr(rec, name, value)
    return rec


def stored_region(m: int, k: int, index: int | None = None) -> dict[str, Any]:
    """Region ``k`` of manuscript ``m`` as a prepared manuscript stores it (a 400 x 300 box on canvas k
    of ``http://lib.test/{m}/``), with the stable ``index`` (default: its position k)."""
    return {
        "index": k if index is None else index,
        "canvas_id": f"http://lib.test/{m}/canvas/{k}",
        "canvas_index": k,
        "xywh": [100, 100, 400, 300],
        "label": "",
        "annotation_id": None,
        "digest": f"{m}{k:063d}",
    }


def prepared_manuscript(
    m: int,
    regions: int | list[dict[str, Any]],
    *,
    label: str | None = None,
    manifest: str | None = None,
    blank: bool = False,
    features_key: str | None = None,
) -> Any:
    """Manuscript ``m`` as the prepare step stores it (a ``PreparedManuscript``): ``regions`` stored regions
    (``stored_region`` dicts) or that many of them, all ``blank`` if asked, labelled "Codex A", "Codex B"...,
    read from ``manifest`` (default ``http://lib.test/{m}/manifest``), with ``features_key`` (default ``str(m)``;
    none without regions)."""
    from collation.store.stored import PreparedManuscript, StoredRegion

    entries = [stored_region(m, k) for k in range(regions)] if isinstance(regions, int) else regions
    return PreparedManuscript(
        index=m,
        manifest=manifest or f"http://lib.test/{m}/manifest",
        label=f"Codex {'ABCDEFGH'[m]}" if label is None else label,
        regions=tuple(StoredRegion.from_dict({**r, "blank": blank or r.get("blank", False)}) for r in entries),
        features_key=(features_key or str(m)) if entries else None,
    )


def finished_collation(
    root: Path,
    manuscripts: list[tuple[Any, dict[str, Any]]],
    scores: dict[tuple[int, int], Any],
    *,
    options: Any = None,
    cid: str = RECORD_ID,
) -> Any:
    """A finished collation in a ``FolderStore`` at ``root``, as the jobs leave it: its record, each
    (``prepared_manuscript``, manifest JSON), and the results of ``scores`` (raw S of each pair (a, b),
    a < b) normalized and propagated by ``options`` (default ``CollationOptions()``). Returns the store."""
    from collation.core.options import CollationOptions
    from collation.core.settings import Settings
    from collation.core.vocabulary import CollationStatus
    from collation.jobs.finishing import compute_results
    from collation.store.folder import FolderStore
    from collation.store.records import CollationRequest, new_record

    store = FolderStore(root)
    urls = [doc.manifest for doc, _ in manuscripts]
    request = CollationRequest.from_json({"manifests": urls, "regions": {}, "options": {}, "callback_url": None})
    settings = Settings.from_env({}, backbone="efficientnet-lite0", chunk_pairs=8)
    record = new_record(cid, request, options or CollationOptions(), settings)
    record.status, record.usable = CollationStatus.FINISHED, list(range(len(manuscripts)))
    store.create_collation(record)
    for doc, manifest in manuscripts:
        store.save_manuscript(cid, doc, manifest)
    for results in compute_results(scores, record.options):
        store.save_results(cid, results)
    return store


def lib_manifest(m: int, n: int) -> dict[str, Any]:
    """Presentation 3 manuscript ``m`` of ``http://lib.test``: ``n`` 1000 x 800 canvases, plain images."""
    canvases = [
        v3_canvas(f"http://lib.test/{m}/canvas/{k}", (1000, 800), body=v3_image_body(f"http://img.test/{m}/{k}.jpg"))
        for k in range(n)
    ]
    return v3_manifest(f"http://lib.test/{m}/manifest", canvases, f"Codex {'ABCDEFGH'[m]}")


def weak_collation(root: Path, options: Any, cid: str = RECORD_ID) -> Any:
    """A and B: three illustrations, A 0 and B 2, A 2 and B 0 true copies (raw S 1.2), A 1 and B 1 a mutual
    best of raw S 0.3 (what unrelated images score). The copies are crossed: each lies before A 1 in one
    manuscript and after B 1 in the other, so no clear match holds the weak one by the order (docs/concordance.md,
    "Held by the order"). C: three blank pages, which match A's and B's illustrations at 1.9."""
    import numpy as np

    ab = np.array([[0.1, 0.1, 1.2], [0.1, 0.3, 0.1], [1.2, 0.1, 0.1]])
    blank = np.full((3, 3), 0.2) + np.eye(3) * 1.7  # blank pages: as high as copies
    manuscripts = [(prepared_manuscript(m, 3, blank=m == 2), lib_manifest(m, 3)) for m in range(3)]
    return finished_collation(root, manuscripts, {(0, 1): ab, (0, 2): blank, (1, 2): blank}, options=options, cid=cid)


def hard_collation(root: Path, options: Any, cid: str = RECORD_ID, n: int = 8) -> Any:
    """A and B: ``n`` illustrations, hard copies of each other (raw S 0.35 on the diagonal, under the fixed
    floor of 0.5) among unrelated pairs scoring 0.05-0.15: the learned floor keeps every copy."""
    import numpy as np

    rng = np.random.default_rng(0)
    scores = rng.uniform(0.05, 0.15, (n, n)) + np.eye(n) * 0.3
    manuscripts = [(prepared_manuscript(m, n), lib_manifest(m, n)) for m in range(2)]
    return finished_collation(root, manuscripts, {(0, 1): scores}, options=options, cid=cid)


# --------------------------------------------------------------------------------------------------
# Loopback HTTP servers


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[ThreadingHTTPServer]:
    """A ``ThreadingHTTPServer`` on a free loopback port answering with ``handler``, in a daemon
    thread, for the ``with`` block (``server.server_address[1]`` is its port)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


Route = Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, str], Any]]
"""A scripted answer: (status, headers, body); a body given as a list of byte chunks is sent
without Content-Length."""


@dataclass
class StaticServer:
    """Serves files under ``root`` and scripted ``routes``; records every request path and header."""

    root: Path
    routes: dict[str, Route] = field(default_factory=dict)
    log: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    active: int = 0
    peak: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def paths(self, prefix: str = "") -> list[str]:
        with self.lock:
            return [path for path, _ in self.log if path.startswith(prefix)]

    def write_json(self, relative: str, doc: Any) -> str:
        """Writes ``doc`` at ``relative`` under the root; returns its URL."""
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc))
        return f"{self.url}/{relative}"


def content_type(path: Path) -> str:
    known = {".json": "application/json", ".jpg": "image/jpeg", ".png": "image/png"}
    return known.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"


def static_handler(server: StaticServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            with server.lock:
                server.log.append((self.path, dict(self.headers)))
                server.active += 1
                server.peak = max(server.peak, server.active)
            try:
                status, headers, body = self._answer()
            finally:
                with server.lock:
                    server.active -= 1
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            if isinstance(body, list):  # chunks of a body of undeclared length, then close
                self.send_header("Connection", "close")
                self.close_connection = True
                self.end_headers()
                for chunk in body:
                    self.wfile.write(chunk)
                return
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _answer(self) -> tuple[int, dict[str, str], Any]:
            path = self.path.split("?", 1)[0]
            for prefix, route in sorted(server.routes.items(), key=lambda kv: -len(kv[0])):
                if path == prefix or (prefix.endswith("/") and path.startswith(prefix)):
                    return route(self)
            file = (server.root / unquote(path).lstrip("/")).resolve()
            if server.root.resolve() in file.parents and file.is_file():
                return 200, {"Content-Type": content_type(file)}, file.read_bytes()
            return 404, {"Content-Type": "text/html"}, b"<html><body>not found</body></html>"

    return Handler


@contextmanager
def static_server(root: Path) -> Iterator[StaticServer]:
    """A ``StaticServer`` of ``root`` on a free loopback port, for the ``with`` block."""
    state = StaticServer(root=root)
    with serving(static_handler(state)) as httpd:
        state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
        yield state
