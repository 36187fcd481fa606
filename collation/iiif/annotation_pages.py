"""Annotation lists and pages as published: embedded or by URL, ``next``-chained, reached through an
AnnotationCollection's (or a 2.x Layer's) ``first`` page; relative ids resolved against the URL of
the document that holds them. What is not a list of annotations is reported, never skipped. API::

    for annotation, page_url, canvas in load_annotations(sources, fetcher, problems): ...

``RegionProblem`` (re-exported by ``regions``) is the report of anything not used.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from collation.core.errors import CollationError
from collation.iiif.manifests import resolve_ref
from collation.iiif.model import AnnotationSource, Canvas, bare, json_id, json_type

if TYPE_CHECKING:
    from collation.net.http import Fetcher

MAX_ANNOTATION_PAGES = 1_000
"""Cap on annotation lists/pages read per manifest, including ``next`` pages."""


@dataclass(frozen=True)
class RegionProblem:
    """Why something that might have been a region is not one; reported, not raised."""

    message: str
    canvas_id: str | None = None
    source: str | None = None  # annotation list URL or annotation id
    region: int | None = None  # index of the region in the manifest's list, when one region failed

    def __str__(self) -> str:
        return self.message


_PAGES = {"annotationlist", "annotationpage", ""}
_COLLECTIONS = {"annotationcollection", "layer"}


def _annotations_in(doc: Any, url: str | None) -> tuple[list[Any] | None, str | None, Any]:
    """(annotations or None when ``doc`` holds none, next page URL, embedded next page) of a document."""
    if isinstance(doc, list):
        return doc, None, None
    if not isinstance(doc, dict):
        return None, None, None
    kind = bare(json_type(doc))
    if kind == "annotation":
        return [doc], None, None
    if kind in _COLLECTIONS:
        first = doc.get("first")
        if isinstance(first, dict) and any(isinstance(first.get(k), list) for k in ("items", "resources")):
            return [], None, first
        ref = json_id(first)
        return [], (resolve_ref(ref, url) if ref else None), None
    items = doc.get("resources") if isinstance(doc.get("resources"), list) else doc.get("items")
    if kind not in _PAGES or not isinstance(items, list):
        if kind in _PAGES and items is None and "next" in doc:
            items = []
        else:
            return None, None, None
    following = json_id(doc.get("next"))
    return items, (resolve_ref(following, url) if following else None), None


def load_annotations(
    sources: Iterable[tuple[AnnotationSource, Canvas | None]],
    fetcher: Fetcher | None,
    problems: list[RegionProblem],
) -> Iterable[tuple[Any, str | None, Canvas | None]]:
    """Yield (annotation, list URL, canvas that referenced it), fetching lists and ``next`` pages once."""
    loaded: set[str] = set()
    pages = 0
    for source, canvas in sources:
        canvas_id = canvas.id if canvas else None
        doc = source.embedded
        url = source.url
        while True:
            if doc is None:
                if url is None or url in loaded:
                    break
                loaded.add(url)
                pages += 1
                if pages > MAX_ANNOTATION_PAGES:
                    problems.append(
                        RegionProblem(f"more than {MAX_ANNOTATION_PAGES} annotation pages: the rest are ignored")
                    )
                    return
                if fetcher is None:
                    problems.append(RegionProblem(f"annotation list {url} not fetched (no fetcher)", canvas_id, url))
                    break
                try:
                    doc, _final = fetcher.get_json(
                        url, what="annotation list", accept=lambda d, u=url: _annotations_in(d, u)
                    )
                except CollationError as exc:
                    problems.append(RegionProblem(exc.message, canvas_id, url))
                    break
            elif url is not None:
                loaded.add(url)
            annotations, following, embedded_next = _annotations_in(doc, url)
            if annotations is None:
                kind = json_type(doc) if isinstance(doc, dict) else type(doc).__name__
                problems.append(
                    RegionProblem(
                        f"annotation list {url or '(embedded)'} is {kind or 'an untyped document'} with no "
                        "annotations, not an AnnotationList or AnnotationPage: nothing read from it",
                        canvas_id,
                        url,
                    )
                )
                break
            for annotation in annotations:
                yield annotation, url, canvas
            doc, url = embedded_next, following
            if embedded_next is not None:
                url = json_id(embedded_next)
            elif following is None:
                break
