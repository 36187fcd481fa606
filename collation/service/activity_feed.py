"""``GET /activity``: the IIIF Change Discovery feed of the documents the service publishes
(``collation.publish.discovery``), so that a harvester keeps its copy of them current.

A finished collation publishes its annotation collection (``/collations/{id}/annotations``, type
``AnnotationCollection``) and a derived manifest per readable manuscript (``Manifest``): each gets a
``Create`` when the collation ended, an ``Update`` at its latest verdict (verdicts change the
annotations, and the manifests point to them), and a ``Delete`` when the collation is deleted
(``DataStore.record_deletion``, written by ``collations.cancel``). Who sees what follows the listing
(``listing.visible``): with API tokens, the caller's own collations only.
"""

from __future__ import annotations

from typing import Any

from collation.core.vocabulary import CollationStatus
from collation.publish.discovery import Activity, build_activity_pages
from collation.service.documents import DocumentCache
from collation.service.listing import current_records, visible
from collation.service.urls import collation_url, manifest_url
from collation.store.datastore import CollationNotFound, DataStore


def published(base: str, cid: str, usable: list[int]) -> list[tuple[str, str]]:
    """(id, type) of what a finished collation publishes: its annotation collection and derived manifests."""
    return [(f"{collation_url(base, cid)}/annotations", "AnnotationCollection")] + [
        (manifest_url(base, cid, m), "Manifest") for m in usable
    ]


def activities(store: DataStore, cache: DocumentCache, base: str, owner: str | None, tokens: bool) -> list[Activity]:
    """Every activity the caller may see: the finished collations' Create and Update, the deleted ones' Delete."""
    out = []
    for record in current_records(store, cache):
        if record.status != CollationStatus.FINISHED or not record.ended or not visible(record, owner, tokens):
            continue
        objects = published(base, record.id, record.usable)
        out += [Activity("Create", oid, kind, record.ended) for oid, kind in objects]
        stamps = [item.created for item in store.load_assessments(record.id) if item.created]
        if stamps and max(stamps) > record.ended:
            out += [Activity("Update", oid, kind, max(stamps)) for oid, kind in objects]
    for note in store.load_deletions():
        if tokens and owner not in note.get("owners", []):
            continue
        for oid, kind in published(base, note["id"], note.get("usable", [])):
            out.append(Activity("Delete", oid, kind, note["deleted"]))
    return out


def activity_url(base: str, page: int | None = None) -> str:
    return f"{base}/activity" if page is None else f"{base}/activity?page={page}"


def feed(
    store: DataStore, cache: DocumentCache, base: str, page: int | None, page_size: int, owner: str | None, tokens: bool
) -> dict[str, Any]:
    """The OrderedCollection (``page`` None) or its page ``page`` (from 0); a 404 past the last."""
    doc, pages = build_activity_pages(
        activities(store, cache, base, owner, tokens),
        collection=activity_url(base),
        page=lambda n: activity_url(base, n),
        page_size=page_size,
    )
    if page is None:
        return doc
    if page >= len(pages):
        raise CollationNotFound(f"the activity feed has no page {page} (0..{len(pages) - 1})", field="page")
    return pages[page]
