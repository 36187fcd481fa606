"""Correspondences out as W3C Web Annotations: a viewer layer for Mirador and a canonical layer.

Two layers from the same correspondences (see ``docs/annotations.md``):

- **viewer layer**: per canvas, an AnnotationPage (Presentation 3) or AnnotationList (2.1) of
  ``commenting`` annotations on the canvas's own region, one per correspondence and side, with an
  HTML body naming the counterpart, the scores and links; every Mirador version lists and draws it;
- **canonical layer**: an AnnotationCollection of ``linking`` annotations, target = region A,
  body = region B (pairs ordered canonically and stored once), scores as ``imcol:`` extension
  properties; expert verdicts are separate ``assessing`` annotations on a link;
- **derived manifests**: a copy of each input manifest (same Presentation version, canvas ids
  unchanged, new id) whose canvases point to their annotation pages.

Everything here is pure: plain data in, JSON-ready dicts out. Inputs::

    manuscripts: Sequence[tuple[Manifest, Sequence[Region]]]   # one entry per manuscript
    correspondences: Sequence[dict]  # {"source": {"manuscript": a, "index": i},
                                     #  "target": {"manuscript": b, "index": j},
                                     #  "S": float, "N_S": float, "P_S": float, "rank": int,
                                     #  "cycle_consistent": bool, "status": "proposed|confirmed|rejected",
                                     #  "id": optional link id (default: position in the list)}

``index`` is a position in that manuscript's ``regions`` sequence. URLs come from a ``UrlScheme``
(format strings or callables), so the service chooses where it serves each document.

API::

    urls = UrlScheme(base="https://host/api/v1/collations/7f3c")
    pages = build_annotation_pages(m, manuscripts, correspondences, urls=urls)  # {canvas_number: page}
    page = build_annotation_page(m, canvas_number, manuscripts, correspondences, urls=urls)
    manifest = build_derived_manifest(m, manuscripts, correspondences, urls=urls)
    collection, link_pages = build_link_collection(manuscripts, correspondences, urls=urls, page_size=100)
    assessment = build_assessment(link_id, "exact", assessor={"id": ..., "type": "Person"}, id=...)
    IMCOL_CONTEXT                                   # the JSON-LD document to serve at urls.context

``canvas_number`` is 1-based: the canvas's position in its manifest plus one.
"""

from __future__ import annotations

import copy
import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from collation import __version__
from collation.errors import InputError
from collation.iiif.http import PROJECT_URL
from collation.iiif.manifests import Canvas, Manifest, canvas_to_image, label_text
from collation.iiif.regions import Region

PRESENTATION_3 = "http://iiif.io/api/presentation/3/context.json"
PRESENTATION_2 = "http://iiif.io/api/presentation/2/context.json"
ANNOTATION_CONTEXT = "http://www.w3.org/ns/anno.jsonld"
MEDIA_FRAGMENTS = "http://www.w3.org/TR/media-frags/"

IMCOL_NAMESPACE = f"{PROJECT_URL}/ns/imcol#"
"""IRI prefix of the ``imcol:`` terms."""

IMCOL_CONTEXT: dict[str, Any] = {
    "@context": {
        "imcol": IMCOL_NAMESPACE,
        "xsd": "http://www.w3.org/2001/XMLSchema#",
        "imcol:rawScore": {"@type": "xsd:double"},
        "imcol:normalizedScore": {"@type": "xsd:double"},
        "imcol:propagatedScore": {"@type": "xsd:double"},
        "imcol:rank": {"@type": "xsd:integer"},
        "imcol:mutualBest": {"@type": "xsd:boolean"},
        "imcol:status": {"@type": "xsd:string"},
        "imcol:method": {"@type": "xsd:string"},
        "imcol:correspondence": {"@type": "@id"},
        "imcol:counterpart": {"@type": "@id"},
    }
}
"""The JSON-LD context of the extension terms; serve it at ``UrlScheme.context`` and list that URL
before the IIIF context. Documented in docs/annotations.md."""

STATUSES = ("proposed", "confirmed", "rejected")
VERDICTS = ("exact", "partial", "semantic", "none")

Template = str | Callable[..., str]


@dataclass(frozen=True)
class UrlScheme:
    """Where the documents live. Each field is a format string over ``{base}``, ``{root}`` (scheme
    and host of base) and the named fields, or a callable taking those as keyword arguments."""

    base: str
    manifest: Template = "{base}/manifests/{manuscript}"
    page: Template = "{base}/pages/{manuscript}/{canvas_number}"
    display: Template = "{base}/display/{link}-{side}"
    link: Template = "{base}/links/{link}"
    collection: Template = "{base}/annotations"
    collection_page: Template = "{base}/annotations?page={page}"
    context: Template = "{root}/ns/imcol/1/context.json"
    viewer: Template | None = None  # e.g. "{base}/view/{link}": a Mirador compare view

    def render(self, name: str, **fields: Any) -> str:
        """The URL ``name`` (a field of this class) for the given fields."""
        template = getattr(self, name)
        if template is None:
            raise ValueError(f"UrlScheme has no {name} template")
        parts = urlsplit(self.base)
        values = {"base": self.base.rstrip("/"), "root": f"{parts.scheme}://{parts.netloc}", **fields}
        if callable(template):
            return template(**values)
        return template.format(**values)


@dataclass(frozen=True)
class _End:
    manuscript: int
    manifest: Manifest
    canvas: Canvas
    region: Region


@dataclass(frozen=True)
class _Link:
    key: str  # link id as used in URLs
    a: _End  # source side
    b: _End  # target side
    data: dict[str, Any]


# -- inputs --------------------------------------------------------------------------------------


def _end(value: Any, manuscripts: Sequence[tuple[Manifest, Sequence[Region]]], name: str) -> _End:
    if not isinstance(value, dict):
        raise InputError(f"{name}: expected {{'manuscript': m, 'index': i}}", field=name)
    m, i = value.get("manuscript"), value.get("index")
    if not isinstance(m, int) or isinstance(m, bool) or not 0 <= m < len(manuscripts):
        raise InputError(f"{name}.manuscript: {m!r} is not a manuscript index", field=f"{name}.manuscript")
    manifest, regions = manuscripts[m]
    if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(regions):
        raise InputError(f"{name}.index: {i!r} is not a region index of manuscript {m}", field=f"{name}.index")
    region = regions[i]
    canvas = manifest.canvas(region.canvas_id)
    if canvas is None:
        raise InputError(f"{name}: region {i} is on {region.canvas_id}, not a canvas of manuscript {m}", field=name)
    return _End(m, manifest, canvas, region)


def _links(
    manuscripts: Sequence[tuple[Manifest, Sequence[Region]]], correspondences: Sequence[dict[str, Any]]
) -> list[_Link]:
    links = []
    for k, c in enumerate(correspondences):
        name = f"correspondences[{k}]"
        if not isinstance(c, dict):
            raise InputError(f"{name}: expected an object", field=name)
        status = c.get("status", "proposed")
        if status not in STATUSES:
            raise InputError(f"{name}.status: {status!r} is not one of {STATUSES}", field=f"{name}.status")
        key = str(c.get("id", k))
        links.append(
            _Link(
                key,
                _end(c.get("source"), manuscripts, f"{name}.source"),
                _end(c.get("target"), manuscripts, f"{name}.target"),
                c,
            )
        )
    return links


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _scores(data: dict[str, Any]) -> dict[str, Any]:
    """The ``imcol:`` properties of a correspondence (non-finite or missing numbers are left out)."""
    out: dict[str, Any] = {}
    for key, term in (("S", "rawScore"), ("N_S", "normalizedScore"), ("P_S", "propagatedScore")):
        number = _number(data.get(key))
        if number is not None:
            out[f"imcol:{term}"] = round(number, 6)
    rank = data.get("rank")
    if isinstance(rank, int) and not isinstance(rank, bool):
        out["imcol:rank"] = rank
    if isinstance(data.get("cycle_consistent"), bool):
        out["imcol:mutualBest"] = data["cycle_consistent"]
    out["imcol:status"] = data.get("status", "proposed")
    return out


def _xywh(region: Region) -> str:
    x, y, w, h = (int(v) for v in region.xywh)
    return f"xywh={x},{y},{w},{h}"


def _software(method: str | None = None) -> dict[str, Any]:
    name = f"image-collation {__version__}" + (f" ({method})" if method else "")
    return {"id": PROJECT_URL, "type": "Software", "name": name}


def _manifest_label(manifest: Manifest, number: int) -> str:
    return manifest.label or f"manuscript {number + 1}"


def _region_image_url(end: _End) -> str | None:
    """An Image API URL showing the region, when the image size is declared in the manifest."""
    image = end.canvas.image
    if image is None or not image.service_id or not image.width or not image.height:
        return None
    try:
        x, y, w, h = canvas_to_image(tuple(float(v) for v in end.region.xywh), end.canvas)  # type: ignore[arg-type]
    except InputError:
        return None
    x0, y0, x1, y1 = (
        max(0, round(x)),
        max(0, round(y)),
        min(image.width, round(x + w)),
        min(image.height, round(y + h)),
    )
    if x1 <= x0 or y1 <= y0:
        return None
    quality = "native" if image.service_version == 1 else "default"
    return f"{image.service_id}/{x0},{y0},{x1 - x0},{y1 - y0}/{min(600, x1 - x0)},/0/{quality}.jpg"


def _summary_html(link: _Link, mine: _End, other: _End, urls: UrlScheme) -> str:
    data = link.data
    rank = data.get("rank")
    head = f"Match {rank}" if isinstance(rank, int) and not isinstance(rank, bool) else "Match"
    where = (
        f"{html.escape(_manifest_label(other.manifest, other.manuscript))}, "
        f"{html.escape(other.canvas.label)} (illustration {other.region.index})"
    )
    numbers = []
    for key, name, digits in (("S", "score", 3), ("N_S", "normalized", 2), ("P_S", "propagated", 2)):
        value = _number(data.get(key))
        if value is not None:
            numbers.append(f"{name} {value:.{digits}f}")
    if data.get("cycle_consistent") is True:
        numbers.append("mutual best")
    numbers.append(html.escape(str(data.get("status", "proposed"))))
    links = []
    image_url = _region_image_url(other)
    if image_url:
        links.append(f'<a href="{html.escape(image_url)}">see the counterpart</a>')
    if urls.viewer is not None:
        viewer = urls.render("viewer", link=link.key, side="a" if mine is link.a else "b")
        links.append(f'<a href="{html.escape(viewer)}">compare in Mirador</a>')
    parts = [f"<p><b>{head}</b> → {where}</p>", f"<p>{' · '.join(numbers)}</p>"]
    if links:
        parts.append(f"<p>{' · '.join(links)}</p>")
    return "".join(parts)


# -- viewer layer --------------------------------------------------------------------------------


def _display_v3(link: _Link, mine: _End, other: _End, urls: UrlScheme, created: str | None) -> dict[str, Any]:
    side, other_side = ("a", "b") if mine is link.a else ("b", "a")
    annotation: dict[str, Any] = {
        "id": urls.render("display", link=link.key, side=side),
        "type": "Annotation",
        "motivation": "commenting",
    }
    if created:
        annotation["created"] = created
    annotation["creator"] = _software()
    annotation["body"] = [
        {
            "type": "TextualBody",
            "purpose": "commenting",
            "format": "text/html",
            "language": "en",
            "value": _summary_html(link, mine, other, urls),
        }
    ]
    annotation["target"] = _specific_resource(mine)
    annotation["imcol:correspondence"] = urls.render("link", link=link.key)
    annotation["imcol:counterpart"] = urls.render("display", link=link.key, side=other_side)
    annotation.update(_scores(link.data))
    return annotation


def _display_v2(link: _Link, mine: _End, other: _End, urls: UrlScheme, created: str | None) -> dict[str, Any]:
    side, other_side = ("a", "b") if mine is link.a else ("b", "a")
    annotation: dict[str, Any] = {
        "@id": urls.render("display", link=link.key, side=side),
        "@type": "oa:Annotation",
        "motivation": "oa:commenting",
        "resource": [{"@type": "dctypes:Text", "format": "text/html", "chars": _summary_html(link, mine, other, urls)}],
        "on": {
            "@type": "oa:SpecificResource",
            "full": mine.canvas.id,
            "selector": {"@type": "oa:FragmentSelector", "value": _xywh(mine.region)},
            "within": {"@id": mine.manifest.id, "@type": "sc:Manifest"},
        },
    }
    if created:
        annotation["created"] = created
    annotation["imcol:correspondence"] = urls.render("link", link=link.key)
    annotation["imcol:counterpart"] = urls.render("display", link=link.key, side=other_side)
    annotation.update(_scores(link.data))
    return annotation


def _specific_resource(end: _End) -> dict[str, Any]:
    return {
        "type": "SpecificResource",
        "source": {
            "id": end.canvas.id,
            "type": "Canvas",
            "partOf": [{"id": end.manifest.id, "type": "Manifest"}],
        },
        "selector": {"type": "FragmentSelector", "conformsTo": MEDIA_FRAGMENTS, "value": _xywh(end.region)},
    }


def _page_document(
    manuscript: int,
    canvas_number: int,
    manifest: Manifest,
    items: list[dict[str, Any]],
    urls: UrlScheme,
) -> dict[str, Any]:
    page_id = urls.render("page", manuscript=manuscript, canvas_number=canvas_number)
    canvas = manifest.canvases[canvas_number - 1]
    label = f"Image collation: {_manifest_label(manifest, manuscript)}, {canvas.label}"
    if manifest.version == 2:
        return {
            "@context": PRESENTATION_2,
            "@id": page_id,
            "@type": "sc:AnnotationList",
            "label": label,
            "resources": items,
        }
    return {
        "@context": [urls.render("context"), PRESENTATION_3],
        "id": page_id,
        "type": "AnnotationPage",
        "label": {"en": [label]},
        "items": items,
    }


def _display_items(
    manuscript: int, links: Sequence[_Link], urls: UrlScheme, created: str | None
) -> dict[int, list[dict[str, Any]]]:
    """Display annotations of one manuscript, grouped by canvas number, in correspondence order."""
    by_canvas: dict[int, list[dict[str, Any]]] = {}
    for link in links:
        for mine, other in ((link.a, link.b), (link.b, link.a)):
            if mine.manuscript != manuscript:
                continue
            build = _display_v2 if mine.manifest.version == 2 else _display_v3
            by_canvas.setdefault(mine.canvas.index + 1, []).append(build(link, mine, other, urls, created))
    return by_canvas


def build_annotation_pages(
    manuscript: int,
    manuscripts: Sequence[tuple[Manifest, Sequence[Region]]],
    correspondences: Sequence[dict[str, Any]],
    *,
    urls: UrlScheme,
    created: str | None = None,
) -> dict[int, dict[str, Any]]:
    """Viewer-layer pages of one manuscript: ``{canvas_number: AnnotationPage or AnnotationList}``
    for every canvas that has at least one correspondence, in the manifest's Presentation version."""
    manifest = _manifest(manuscript, manuscripts)
    by_canvas = _display_items(manuscript, _links(manuscripts, correspondences), urls, created)
    return {
        number: _page_document(manuscript, number, manifest, items, urls) for number, items in sorted(by_canvas.items())
    }


def build_annotation_page(
    manuscript: int,
    canvas_number: int,
    manuscripts: Sequence[tuple[Manifest, Sequence[Region]]],
    correspondences: Sequence[dict[str, Any]],
    *,
    urls: UrlScheme,
    created: str | None = None,
) -> dict[str, Any]:
    """One viewer-layer page (empty when the canvas has no correspondence); ``InputError`` when
    the canvas number is not in the manifest."""
    manifest = _manifest(manuscript, manuscripts)
    if not 1 <= canvas_number <= len(manifest.canvases):
        raise InputError(f"canvas number {canvas_number} is not in manuscript {manuscript}", field="canvas_number")
    by_canvas = _display_items(manuscript, _links(manuscripts, correspondences), urls, created)
    return _page_document(manuscript, canvas_number, manifest, by_canvas.get(canvas_number, []), urls)


def _manifest(manuscript: int, manuscripts: Sequence[tuple[Manifest, Sequence[Region]]]) -> Manifest:
    if not 0 <= manuscript < len(manuscripts):
        raise InputError(f"manuscript {manuscript} does not exist", field="manuscript")
    return manuscripts[manuscript][0]


# -- derived manifests ---------------------------------------------------------------------------


def _with_suffix(label: Any, suffix: str, version: int) -> Any:
    if version == 2:
        return (label_text(label) or "Manuscript") + suffix
    if isinstance(label, dict) and label and all(isinstance(v, list) for v in label.values()):
        return {
            lang: [f"{v}{suffix}" if isinstance(v, str) else v for v in values] or [suffix.strip()]
            for lang, values in label.items()
        }
    text = label_text(label)
    return {"none": [f"{text}{suffix}" if text else suffix.strip()]}


def build_derived_manifest(
    manuscript: int,
    manuscripts: Sequence[tuple[Manifest, Sequence[Region]]],
    correspondences: Sequence[dict[str, Any]],
    *,
    urls: UrlScheme,
    label_suffix: str = " (image collation)",
) -> dict[str, Any]:
    """A copy of the input manifest with a new id and label, the same Presentation version and
    canvas ids, whose canvases with correspondences point to their annotation pages (3.0:
    ``annotations`` AnnotationPage references; 2.1: ``otherContent`` AnnotationList references)."""
    manifest = _manifest(manuscript, manuscripts)
    numbers = set(_display_items(manuscript, _links(manuscripts, correspondences), urls, None))
    pages = {manifest.canvases[n - 1].id: urls.render("page", manuscript=manuscript, canvas_number=n) for n in numbers}
    doc = copy.deepcopy(manifest.raw)
    new_id = urls.render("manifest", manuscript=manuscript)
    if manifest.version == 2:
        doc.pop("id", None)
        doc["@id"] = new_id
        doc["label"] = _with_suffix(doc.get("label"), label_suffix, 2)
        sequences = doc.get("sequences")
        sequences = [sequences] if isinstance(sequences, dict) else sequences
        raw_canvases = sequences[0].get("canvases", []) if sequences and isinstance(sequences[0], dict) else []
        key, reference = "otherContent", lambda url: {"@id": url, "@type": "sc:AnnotationList"}
    else:
        doc.pop("@id", None)
        doc["id"] = new_id
        doc["label"] = _with_suffix(doc.get("label"), label_suffix, 3)
        raw_canvases = doc.get("items", [])
        key, reference = "annotations", lambda url: {"id": url, "type": "AnnotationPage"}
    for raw in raw_canvases if isinstance(raw_canvases, list) else []:
        if not isinstance(raw, dict):
            continue
        canvas_id = raw.get("id", raw.get("@id"))
        canvas_id = canvas_id.strip() if isinstance(canvas_id, str) else canvas_id
        if canvas_id in pages:
            existing = raw.get(key)
            existing = existing if isinstance(existing, list) else ([existing] if existing else [])
            raw[key] = [*existing, reference(pages[canvas_id])]
    return doc


# -- canonical layer -----------------------------------------------------------------------------


def _canonical(link: _Link) -> tuple[_End, _End]:
    """Order the two ends so that A ↔ B is written once: by manifest id, canvas, then region."""

    def key(end: _End) -> tuple[str, int, int, int]:
        return end.manifest.id, end.manuscript, end.canvas.index, end.region.index

    return (link.a, link.b) if key(link.a) <= key(link.b) else (link.b, link.a)


def _link_annotation(link: _Link, urls: UrlScheme, method: str | None, created: str | None) -> dict[str, Any]:
    a, b = _canonical(link)
    annotation: dict[str, Any] = {
        "id": urls.render("link", link=link.key),
        "type": "Annotation",
        "motivation": "linking",
    }
    if created:
        annotation["created"] = created
    annotation["creator"] = _software(method)
    annotation["body"] = _specific_resource(b)
    annotation["target"] = _specific_resource(a)
    annotation.update(_scores(link.data))
    if method:
        annotation["imcol:method"] = method
    return annotation


def paginate(
    items: Sequence[dict[str, Any]],
    *,
    urls: UrlScheme,
    label: str,
    page_size: int = 100,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An AnnotationCollection (``first``, ``last``, ``total``) and its AnnotationPages (``partOf``,
    ``next``, ``prev``), at ``urls.collection`` and ``urls.collection_page`` (page numbers from 1).

    ``startIndex`` is (page - 1) × page_size; it is not written because the Presentation 3 schema
    does not allow it on AnnotationPage.
    """
    if page_size < 1:
        raise InputError("page_size must be at least 1", field="page_size")
    context = [urls.render("context"), ANNOTATION_CONTEXT, PRESENTATION_3]
    collection_id = urls.render("collection")
    count = math.ceil(len(items) / page_size)
    page_ids = [urls.render("collection_page", page=n + 1) for n in range(count)]
    collection: dict[str, Any] = {
        "@context": context,
        "id": collection_id,
        "type": "AnnotationCollection",
        "label": {"en": [label]},
    }
    if items:  # the schema requires total > 0, so an empty collection has no total, first or last
        collection["total"] = len(items)
        collection["first"] = {"id": page_ids[0], "type": "AnnotationPage"}
        collection["last"] = {"id": page_ids[-1], "type": "AnnotationPage"}
    pages = []
    for n in range(count):
        page: dict[str, Any] = {
            "@context": context,
            "id": page_ids[n],
            "type": "AnnotationPage",
            "partOf": [{"id": collection_id, "type": "AnnotationCollection", "label": {"en": [label]}}],
            "items": list(items[n * page_size : (n + 1) * page_size]),
        }
        if n > 0:
            page["prev"] = {"id": page_ids[n - 1], "type": "AnnotationPage"}
        if n + 1 < count:
            page["next"] = {"id": page_ids[n + 1], "type": "AnnotationPage"}
        pages.append(page)
    return collection, pages


def build_link_collection(
    manuscripts: Sequence[tuple[Manifest, Sequence[Region]]],
    correspondences: Sequence[dict[str, Any]],
    *,
    urls: UrlScheme,
    page_size: int = 100,
    method: str | None = None,
    created: str | None = None,
    label: str = "Image collation: correspondences",
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The canonical layer: ``linking`` annotations (target = region A, body = region B), each
    unordered pair once (the first occurrence wins), paged as an AnnotationCollection."""
    seen: set[tuple[tuple[int, int], tuple[int, int]]] = set()
    items = []
    for link in _links(manuscripts, correspondences):
        a, b = _canonical(link)
        pair = ((a.manuscript, a.region.index), (b.manuscript, b.region.index))
        if pair in seen:
            continue
        seen.add(pair)
        items.append(_link_annotation(link, urls, method, created))
    return paginate(items, urls=urls, label=label, page_size=page_size)


def build_assessment(
    link_id: str,
    verdict: str,
    *,
    assessor: dict[str, Any],
    id: str,
    created: str | None = None,
    note: str | None = None,
    with_context: bool = False,
) -> dict[str, Any]:
    """An expert's verdict (``exact``, ``partial``, ``semantic`` or ``none``) on a canonical link, as
    an ``assessing`` annotation whose creator is the expert (``{"id", "type": "Person", "name"}``)."""
    if verdict not in VERDICTS:
        raise InputError(f"verdict {verdict!r} is not one of {VERDICTS}", field="verdict")
    if not isinstance(assessor, dict) or not assessor.get("type"):
        raise InputError("assessor must be an agent object with a type (e.g. Person)", field="assessor")
    body: list[dict[str, Any]] = [{"type": "TextualBody", "purpose": "assessing", "value": verdict}]
    if note:
        body.append({"type": "TextualBody", "purpose": "commenting", "value": note})
    annotation: dict[str, Any] = {}
    if with_context:  # when served on its own rather than inside a page
        annotation["@context"] = [ANNOTATION_CONTEXT, PRESENTATION_3]
    annotation.update({"id": id, "type": "Annotation", "motivation": "assessing", "creator": assessor})
    if created:
        annotation["created"] = created
    annotation["body"] = body if note else body[0]
    annotation["target"] = link_id
    return annotation
