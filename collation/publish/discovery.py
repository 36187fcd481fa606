"""IIIF Change Discovery API 1.0: the activities of the documents the service publishes, as an
Activity Streams ``OrderedCollection`` of ``OrderedCollectionPage``s, so that an aggregator (a
library's harvester, the IIIF registry) learns what was created, updated and deleted.

The collection refers to its ``first`` and ``last`` pages; the pages hold the activities oldest first
(``orderedItems``, by ``endTime``), link ``prev``/``next``, name their collection (``partOf``) and their
``startIndex``; a harvester reads from ``last`` backwards until it reaches what it has seen
(the specification's 3.5). Each activity is ``{"type": "Create" | "Update" | "Delete", "object":
{"id", "type"}, "endTime"}``. Pure: activities in, JSON-ready dicts out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from collation.core.errors import InputError

DISCOVERY_CONTEXT = "http://iiif.io/api/discovery/1/context.json"
ACTIVITY_TYPES = ("Create", "Update", "Delete")


@dataclass(frozen=True)
class Activity:
    """One change: ``type`` (``ACTIVITY_TYPES``) of the document ``object_id`` (of IIIF class
    ``object_type``: ``Manifest``, ``AnnotationCollection``) that ended at ``end_time`` (UTC, ``...Z``)."""

    type: str
    object_id: str
    object_type: str
    end_time: str

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "object": {"id": self.object_id, "type": self.object_type}, "endTime": self.end_time}


def build_activity_pages(
    activities: Sequence[Activity], *, collection: str, page: Callable[[int], str], page_size: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``OrderedCollection`` at ``collection`` and its pages (``page(n)``, n from 0), oldest
    activity first (by ``end_time``, then in the order given). An empty feed still has one page, so
    that ``last`` (which the specification requires) names a document."""
    if page_size < 1:
        raise InputError("page_size must be at least 1", field="page_size")
    ordered = sorted(activities, key=lambda a: a.end_time)  # stable: ties keep the order given
    count = max(1, math.ceil(len(ordered) / page_size))
    ref = lambda n: {"id": page(n), "type": "OrderedCollectionPage"}  # noqa: E731
    doc = {
        "@context": DISCOVERY_CONTEXT,
        "id": collection,
        "type": "OrderedCollection",
        "totalItems": len(ordered),
        "first": ref(0),
        "last": ref(count - 1),
    }
    pages = []
    for n in range(count):
        out: dict[str, Any] = {
            "@context": DISCOVERY_CONTEXT,
            "id": page(n),
            "type": "OrderedCollectionPage",
            "startIndex": n * page_size,
            "partOf": {"id": collection, "type": "OrderedCollection"},
        }
        if n > 0:
            out["prev"] = ref(n - 1)
        if n + 1 < count:
            out["next"] = ref(n + 1)
        out["orderedItems"] = [a.to_json() for a in ordered[n * page_size : (n + 1) * page_size]]
        pages.append(out)
    return doc, pages
