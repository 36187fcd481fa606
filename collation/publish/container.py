"""The canonical layer as a Web Annotation Protocol container (W3C, "Web Annotation Protocol" 4):
an LDP BasicContainer that is also an AnnotationCollection, paged, in the three representations a
client chooses with ``Prefer``, and filtered to the annotations that touch one canvas.

- **descriptions** (the default, ``oa:PreferContainedDescriptions``): the container with its first
  page embedded, each annotation in full;
- **IRIs** (``oa:PreferContainedIRIs``): the same with the annotations' IRIs only;
- **minimal** (``ldp:PreferMinimalContainer``): the container alone, ``first`` and ``last`` IRIs.

The container's IRI ends in ``/`` (the protocol's 4); each representation has its own IRI
(``?iris=1`` or ``?iris=0``, as in the protocol's examples), which the service sends back as
``Content-Location``; pages are ``...&page=N`` from 0. ``?target=<canvas IRI>`` keeps the
annotations whose target or body is a region of that canvas (what a viewer asks for the canvas on
screen; IIIF api issue 951, miiify): a filtered container is a container of its own, with its own
``total``, whose IRIs all carry the filter. Pure: annotations in, JSON-ready dicts out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from collation.core.errors import InputError
from collation.publish.parts import ANNOTATION_CONTEXT

LDP_CONTEXT = "http://www.w3.org/ns/ldp.jsonld"
PREFER_MINIMAL = "http://www.w3.org/ns/ldp#PreferMinimalContainer"
PREFER_IRIS = "http://www.w3.org/ns/oa#PreferContainedIRIs"
PREFER_DESCRIPTIONS = "http://www.w3.org/ns/oa#PreferContainedDescriptions"


@dataclass(frozen=True)
class ContainerView:
    """Which of the container's documents a request names: ``target`` (a canvas IRI, or None for
    all), ``iris`` (annotations as IRIs rather than descriptions), ``minimal`` (no embedded page)
    and ``page`` (None: the container itself; a page from 0 otherwise)."""

    target: str | None = None
    iris: bool = False
    minimal: bool = False
    page: int | None = None


def _sources(part: Any) -> list[str]:
    """The canvas IRIs a target or body names (a SpecificResource, a list of them, or a plain IRI)."""
    if isinstance(part, list):
        return [iri for item in part for iri in _sources(item)]
    if isinstance(part, str):
        return [part.split("#", 1)[0]]
    if isinstance(part, dict):
        source = part.get("source")
        if isinstance(source, dict):
            source = source.get("id")
        if isinstance(source, str):
            return [source.split("#", 1)[0]]
    return []


def touches(annotation: dict[str, Any], canvas: str) -> bool:
    """Whether ``annotation``'s target or body is (a region of) ``canvas``; the IRI's fragment is ignored."""
    wanted = canvas.split("#", 1)[0]
    return wanted in _sources(annotation.get("target")) or wanted in _sources(annotation.get("body"))


def view_url(container: str, view: ContainerView, page: int | None = None) -> str:
    """The IRI of the container (``page`` None) or of one of its pages, for ``view``'s filter and form."""
    query: dict[str, Any] = {}
    if view.target is not None:
        query["target"] = view.target
    query["iris"] = 1 if view.iris else 0
    if page is not None:
        query["page"] = page
    return f"{container}?{urlencode(query)}"


def _page(
    items: Sequence[dict[str, Any]], container: str, view: ContainerView, n: int, count: int, size: int
) -> dict[str, Any]:
    """Page ``n`` (from 0) of ``count``: its annotations in full (each with its ``@context``, as one
    fetched alone would be) or as IRIs."""
    chunk = items[n * size : (n + 1) * size]
    page: dict[str, Any] = {
        "@context": ANNOTATION_CONTEXT,
        "id": view_url(container, view, n),
        "type": "AnnotationPage",
        "partOf": {"id": view_url(container, view), "total": len(items)},
        "startIndex": n * size,
    }
    if n > 0:
        page["prev"] = view_url(container, view, n - 1)
    if n + 1 < count:
        page["next"] = view_url(container, view, n + 1)
    page["items"] = [a["id"] for a in chunk] if view.iris else [{"@context": ANNOTATION_CONTEXT, **a} for a in chunk]
    return page


def container_document(
    annotations: Sequence[dict[str, Any]],
    *,
    container: str,
    view: ContainerView,
    label: str,
    page_size: int,
    modified: str | None = None,
) -> dict[str, Any]:
    """The document ``view`` names in the container at ``container`` (an IRI ending in ``/``) of
    ``annotations`` (the canonical layer's items, without ``@context``): the container or one page.

    There is always a page 0, empty when no annotation passes the filter, so that ``first`` and
    ``last`` are always there. A page past the last raises ``InputError`` (field ``page``).
    """
    if page_size < 1:
        raise InputError("page_size must be at least 1", field="page_size")
    items = [a for a in annotations if view.target is None or touches(a, view.target)]
    count = max(1, math.ceil(len(items) / page_size))
    if view.page is not None:
        if not 0 <= view.page < count:
            raise InputError(f"the container has no page {view.page} (0..{count - 1})", field="page")
        page = _page(items, container, view, view.page, count, page_size)
        if modified:
            page["partOf"]["modified"] = modified
        return page
    doc: dict[str, Any] = {
        "@context": [ANNOTATION_CONTEXT, LDP_CONTEXT],
        "id": view_url(container, view),
        "type": ["BasicContainer", "AnnotationCollection"],
        "label": label,
        "total": len(items),
    }
    if modified:
        doc["modified"] = modified
    if view.minimal:
        doc["first"] = view_url(container, view, 0)
    else:
        first = _page(items, container, view, 0, count, page_size)
        doc["first"] = {k: v for k, v in first.items() if k not in ("@context", "partOf")}
    doc["last"] = view_url(container, view, count - 1)
    return doc


def parse_prefer(header: str | None) -> tuple[bool, bool] | None:
    """``(iris, minimal)`` from a ``Prefer: return=representation; include="..."`` header (RFC 7240,
    the protocol's 4.2), or None when it states no preference this container honours. Of the
    contained forms, IRIs win when both are named; ``omit`` of the descriptions means IRIs too."""
    if not header:
        return None
    for preference in header.split(","):
        fields = [f.strip() for f in preference.split(";")]
        if fields[0].replace(" ", "") != "return=representation":
            continue
        params: dict[str, set[str]] = {}
        for field in fields[1:]:
            name, _, value = field.partition("=")
            params.setdefault(name.strip().lower(), set()).update(value.strip().strip('"').split())
        include, omit = params.get("include", set()), params.get("omit", set())
        iris = PREFER_IRIS in include or PREFER_DESCRIPTIONS in omit
        minimal = PREFER_MINIMAL in include
        if iris or minimal or PREFER_DESCRIPTIONS in include:
            return iris, minimal
    return None
