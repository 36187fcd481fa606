"""The canonical layer: an AnnotationCollection of ``linking`` annotations (target = region A,
body = region B, plus a "mirrored copy" / "turned copy" tagging body for a transposed copy, each
unordered pair once, scores as ``imcol:`` properties), paged, and the experts' ``assessing``
annotations on a link.

The collection and its pages come in two forms of the same annotations (docs/annotations.md): IIIF
Presentation 3's (``paginate``: ``label`` a language map, ``first``/``last``/``next``/``prev`` and
``partOf`` objects), which IIIF viewers read, and the W3C Web Annotation model's
(``web_annotation_form``: ``label`` a string, those links IRIs, ``partOf`` the collection and each
page's ``startIndex``), which passes the Working Group's tests and is served for the media type
``application/ld+json; profile="http://www.w3.org/ns/anno.jsonld"``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from collation.core.correspondence import Correspondence
from collation.core.errors import InputError
from collation.core.vocabulary import CATEGORIES
from collation.iiif.model import Manifest
from collation.iiif.regions import Region
from collation.publish.parts import (
    ANNOTATION_CONTEXT,
    PRESENTATION_3,
    End,
    Link,
    UrlScheme,
    read_links,
    score_properties,
    software_agent,
    specific_resource,
    transposition_body,
)


def _canonical(link: Link) -> tuple[End, End]:
    """Order the two ends so that A ↔ B is written once: by manifest id, canvas, then region."""

    def key(end: End) -> tuple[str, int, int, int]:
        return end.manifest.id, end.manuscript, end.canvas.index, end.region.index

    return (link.a, link.b) if key(link.a) <= key(link.b) else (link.b, link.a)


def _link_annotation(link: Link, urls: UrlScheme, method: str | None, created: str | None) -> dict[str, Any]:
    a, b = _canonical(link)
    annotation: dict[str, Any] = {
        "id": urls.render("link", link=link.key),
        "type": "Annotation",
        "motivation": "linking",
    }
    if created:
        annotation["created"] = created
    annotation["creator"] = software_agent(urls, method)
    tag = transposition_body(link.correspondence)  # a transposed copy: region B and the words that say so
    annotation["body"] = [specific_resource(b), tag] if tag else specific_resource(b)
    annotation["target"] = specific_resource(a)
    annotation.update(score_properties(link.correspondence))
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


def plain_label(label: Any) -> str:
    """A IIIF language map's first value (``{"en": ["..."]}`` -> ``"..."``); a string as it is."""
    if isinstance(label, dict):
        return next((str(v[0]) for v in label.values() if v), "")
    return str(label)


def web_annotation_form(doc: dict[str, Any], *, start_index: int | None = None) -> dict[str, Any]:
    """The W3C Web Annotation form of a collection or page of ``paginate`` (same annotations).

    The Web Annotation context comes last, so that where it and IIIF's define a term (``label``,
    ``partOf``, ``first``...) its meaning holds; IIIF's still names ``Canvas`` and ``Manifest``.
    ``start_index`` is a page's (the index of its first annotation in the collection, from 0).
    """
    context = [c for c in doc["@context"] if c != ANNOTATION_CONTEXT] + [ANNOTATION_CONTEXT]
    out: dict[str, Any] = {"@context": context, "id": doc["id"], "type": doc["type"]}
    if doc["type"] == "AnnotationCollection":
        out["label"] = plain_label(doc["label"])
        out.update({k: doc[k] if k == "total" else doc[k]["id"] for k in ("total", "first", "last") if k in doc})
        return out
    collection = doc["partOf"][0]
    out["partOf"] = {"id": collection["id"], "label": plain_label(collection["label"])}
    out.update({k: doc[k]["id"] for k in ("next", "prev") if k in doc})
    if start_index is not None:
        out["startIndex"] = start_index
    out["items"] = doc["items"]
    return out


def build_link_collection(
    manuscripts: Sequence[tuple[Manifest, Sequence[Region]]],
    correspondences: Sequence[Correspondence],
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
    for link in read_links(manuscripts, correspondences):
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
    if verdict not in CATEGORIES:
        raise InputError(f"verdict {verdict!r} is not one of {CATEGORIES}", field="verdict")
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
