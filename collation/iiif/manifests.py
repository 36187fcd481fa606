"""Lenient reading of IIIF Presentation 2.1 and 3.0 manifests into the model of ``collation.iiif.model``.

Real manifests from many libraries break the specs in many small ways (services as objects or
lists, 1.1 contexts, protocol-relative ids, Choice bodies, canvases larger than their images), so
parsing keeps only what collation needs and survives everything else: a document is either read,
possibly with ``Manifest.problems`` listing canvases it skipped, or refused with a ``ManifestError``
(or ``LimitError``) naming the URL and the reason. No other exception leaves this module.

API::

    manifest = load_manifest(source, fetcher=fetcher)            # URL or local .json path
    manifest = parse_manifest(doc, url=..., max_canvases=...)    # already-parsed JSON
    version = detect_version(doc)                                # 2 or 3

``max_canvases`` defaults to the fetcher's ``FetchSettings.max_canvases`` (``load_manifest``) or to
that field's default (``parse_manifest``). What a canvas paints is read in ``painting``; coordinates
are in ``geometry``.

Canvas ids are kept byte for byte as published: they are the keys of every annotation we write.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from collation.core.errors import LimitError, ManifestError
from collation.core.settings import FetchSettings
from collation.iiif.model import (
    AnnotationSource,
    Canvas,
    Manifest,
    as_list,
    bare,
    dimension,
    json_id,
    json_type,
    label_text,
    normalize_url,
)
from collation.iiif.painting import body_annotations, painted_images
from collation.net.decode import parse_json_bytes

if TYPE_CHECKING:
    from collation.net.http import Fetcher

# -- version and type ----------------------------------------------------------------------------


def detect_version(doc: Any, *, url: str | None = None) -> int:
    """Presentation version of a document: from ``@context``, else from its structure."""
    where = url or "document"
    if not isinstance(doc, dict):
        raise ManifestError(f"{where} is not a JSON object but {_kind(doc)}", url=url)
    for context in as_list(doc.get("@context")):
        if not isinstance(context, str):
            continue
        match = re.search(r"iiif\.io/api/presentation/(\d+)", context)
        if match:
            version = int(match.group(1))
            if version in (2, 3):
                return version
            raise ManifestError(
                f"{where} uses IIIF Presentation {version}, which is not supported (only 2.x and 3.0)",
                url=url,
                field="@context",
            )
        if "shared-canvas.org" in context:
            return 2
    if "sequences" in doc or ("@id" in doc and "id" not in doc):
        return 2
    if "items" in doc or "id" in doc:
        return 3
    raise ManifestError(f"{where} is not a IIIF manifest: no Presentation @context, no sequences and no items", url=url)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(type(value), "a number")


def _check_type(doc: dict[str, Any], version: int, url: str | None) -> None:
    where = url or "document"
    kind = bare(json_type(doc))
    label = label_text(doc.get("label"))
    named = f" {label!r}" if label else ""
    if kind == "collection" or (version == 2 and not kind and ("manifests" in doc or "collections" in doc)):
        members = [json_id(m) for m in as_list(doc.get("manifests")) + as_list(doc.get("items"))]
        members = [m for m in members if m][:3]
        hint = f"; its first members: {', '.join(members)}" if members else ""
        raise ManifestError(
            f"{where} is a IIIF Collection{named} ({json_id(doc) or 'no id'}), not a Manifest: "
            f"pass the URL of one of its manifests{hint}",
            url=url,
            field="type",
        )
    if kind and kind != "manifest":
        raise ManifestError(
            f"{where} is of type {json_type(doc)}, not a IIIF Manifest",
            url=url,
            field="type" if version == 3 else "@type",
        )


# -- parsing -------------------------------------------------------------------------------------


def parse_manifest(doc: Any, *, url: str | None = None, max_canvases: int | None = None) -> Manifest:
    """Read a parsed manifest (2.x or 3.0). Raises ``ManifestError``/``LimitError`` when unusable.

    Canvases that cannot be used at all (no id, not an object) are skipped and listed in
    ``problems``; a manifest with no usable canvas is refused. More than ``max_canvases`` (default
    ``FetchSettings.max_canvases``) raises ``LimitError``.
    """
    cap = FetchSettings.max_canvases if max_canvases is None else max_canvases
    try:
        return _parse_manifest(doc, url=url, max_canvases=cap)
    except RecursionError:
        raise ManifestError(f"{url or 'document'} is nested too deeply to read", url=url) from None


def _parse_manifest(doc: Any, *, url: str | None, max_canvases: int) -> Manifest:
    version = detect_version(doc, url=url)
    _check_type(doc, version, url)
    where = url or "manifest"
    manifest_id = json_id(doc)
    if manifest_id is None:
        if url is None:
            raise ManifestError(f"{where} has no id", url=url, field="id" if version == 3 else "@id")
        manifest_id = url
    if version == 2:
        raw_canvases, path = _v2_canvases(doc, where, url)
    else:
        raw_canvases, path = doc.get("items"), "items"
        if not isinstance(raw_canvases, list):
            raise ManifestError(f"{where} has no canvases ({path} is missing or not a list)", url=url, field=path)
    if len(raw_canvases) > max_canvases:
        raise LimitError(
            f"{where} has {len(raw_canvases)} canvases, more than the cap of {max_canvases}",
            url=url,
            field=path,
        )
    canvases: list[Canvas] = []
    problems: list[str] = []
    for position, raw in enumerate(raw_canvases):
        name = f"{path}[{position}]"
        if not isinstance(raw, dict):
            problems.append(f"{name} is {_kind(raw)}, not a canvas: skipped")
            continue
        if version == 3 and json_type(raw) and bare(json_type(raw)) != "canvas":
            problems.append(f"{name} is of type {json_type(raw)}, not a Canvas: skipped")
            continue
        canvas_id = json_id(raw)
        if canvas_id is None:
            problems.append(f"{name} has no id: skipped")
            continue
        canvases.append(_parse_canvas(raw, len(canvases), version, url, name))
    if not canvases and not json_type(doc) and not any(isinstance(raw, dict) for raw in raw_canvases):
        # a JSON file that merely has an "items" list (no type, no canvas in it): say what it is, not
        # "items[0] is a number, not a canvas" for each of its entries
        raise ManifestError(
            f"{where}: this file is not a IIIF manifest (no type, and no canvas)", url=url, field="type"
        )
    if not canvases:
        detail = f" ({'; '.join(problems[:3])})" if problems else ""
        raise ManifestError(f"{where} has no usable canvases{detail}", url=url, field=path)
    problems += [p for canvas in canvases for p in canvas.problems]
    manifest_sources = _annotation_sources(doc.get("annotations"), url) if version == 3 else ()
    return Manifest(
        id=manifest_id,
        url=url,
        version=version,
        label=label_text(doc.get("label")),
        canvases=tuple(canvases),
        raw=doc,
        problems=tuple(problems),
        annotation_sources=manifest_sources,
    )


def _v2_canvases(doc: dict[str, Any], where: str, url: str | None) -> tuple[list[Any], str]:
    sequences = doc.get("sequences")
    if isinstance(sequences, dict):
        sequences = [sequences]
    if not isinstance(sequences, list) or not sequences or not isinstance(sequences[0], dict):
        raise ManifestError(f"{where} has no canvases (no sequences)", url=url, field="sequences")
    canvases = sequences[0].get("canvases")
    if not isinstance(canvases, list):
        raise ManifestError(
            f"{where} has no canvases (sequences[0].canvases is missing or not a list)",
            url=url,
            field="sequences[0].canvases",
        )
    return canvases, "sequences[0].canvases"


def _parse_canvas(raw: dict[str, Any], index: int, version: int, url: str | None, name: str) -> Canvas:
    canvas_id = json_id(raw)
    assert canvas_id is not None
    width = dimension(raw.get("width"), f"{name}.width", url)
    height = dimension(raw.get("height"), f"{name}.height", url)
    if width is None or height is None:
        width = height = None
    size = (width, height) if width and height else None
    images, problems = painted_images(raw, url, version=version, canvas_size=size)
    image = images[0] if images else None
    if not images and not problems:
        problems.append(f"canvas {canvas_id} paints no image (no painting annotation)")
    if width is None and image is not None and image.width and image.height and image.target is None:
        width, height = image.width, image.height
        if image.rotation in (90, 270):
            width, height = height, width
    sources_key = "otherContent" if version == 2 else "annotations"
    return Canvas(
        id=canvas_id,
        index=index,
        label=label_text(raw.get("label")) or f"canvas {index + 1}",
        width=width,
        height=height,
        image=image,
        annotation_sources=_annotation_sources(as_list(raw.get(sources_key)) + body_annotations(raw), url),
        images=tuple(images),
        problems=tuple(problems),
    )


def resolve_ref(ref: str, base: str | None) -> str:
    """A reference made fetchable: protocol-relative ids get a scheme, relative ids are resolved
    against the URL of the document that holds them."""
    ref = normalize_url(ref, base)
    if base and base.startswith(("http://", "https://")) and not ref.startswith(("http://", "https://")):
        return urljoin(base, ref)
    return ref


def _annotation_sources(value: Any, url: str | None) -> tuple[AnnotationSource, ...]:
    sources = []
    for entry in as_list(value):
        if isinstance(entry, str):
            sources.append(AnnotationSource(url=resolve_ref(entry, url)))
        elif isinstance(entry, dict):
            embedded = any(isinstance(entry.get(k), list) for k in ("items", "resources"))
            ref = json_id(entry)
            if embedded:
                sources.append(AnnotationSource(url=ref, embedded=entry))
            elif ref:
                sources.append(AnnotationSource(url=resolve_ref(ref, url)))
    return tuple(sources)


# -- loading -------------------------------------------------------------------------------------


def is_url(source: str) -> bool:
    """Whether a command-line argument names a URL rather than a local path."""
    return isinstance(source, str) and source.strip().lower().startswith(("http://", "https://", "//"))


def load_manifest(source: str, *, fetcher: Fetcher | None = None, max_canvases: int | None = None) -> Manifest:
    """Load a manifest from a URL (through ``fetcher``) or a local JSON file and parse it.

    ``Manifest.url`` is the URL or absolute path as given; ``Manifest.id`` is the declared id. The
    caps (``max_canvases``, bytes of a local file) are the fetcher's settings, or their defaults.
    """
    conf = fetcher.conf if fetcher is not None else FetchSettings()
    max_canvases = conf.max_canvases if max_canvases is None else max_canvases
    if is_url(source):
        if fetcher is None:
            raise ManifestError(f"manifest {source}: a URL needs a fetcher", url=source)
        parsed: list[Manifest] = []  # the reader accepts the document before the fetcher caches it
        doc, _final = fetcher.get_json(
            source,
            what="manifest",
            accept=lambda d: parsed.append(parse_manifest(d, url=source.strip(), max_canvases=max_canvases)),
        )
        return parsed[0] if parsed else parse_manifest(doc, url=source.strip(), max_canvases=max_canvases)
    path = Path(source)
    limit = conf.max_json_bytes
    try:
        size = path.stat().st_size
        if size > limit:
            raise LimitError(f"manifest {path} is {size} bytes, more than the cap of {limit}", url=str(path))
        content = path.read_bytes()
    except FileNotFoundError:
        raise ManifestError(f"manifest {path}: no such file", url=str(path)) from None
    except OSError as exc:
        raise ManifestError(f"manifest {path}: cannot read it: {exc.strerror or exc}", url=str(path)) from None
    doc = parse_json_bytes(content, url=str(path), what="manifest")
    return parse_manifest(doc, url=str(path.resolve()), max_canvases=max_canvases)
