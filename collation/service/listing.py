"""``GET /collations``: the collations a caller may see, newest first, a page at a time.

Who sees what: without ``settings.api_tokens`` every collation is listed. With tokens, each
collation records the SHA-256 of the token that created it (``record.owners``; the same request
made with another token is another collation, ``records.collation_id``), and a caller sees only the
collations of the token it sends; a caller without a token sees none (single collations stay
readable by id, as every read is). Tokens themselves are never stored.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from marshmallow import Schema, fields, validate

from collation.core.errors import InputError, StoreFormatError
from collation.core.vocabulary import CollationStatus
from collation.service import urls
from collation.service.collations import record_summary
from collation.service.documents import RECORDS_CACHED, DocumentCache
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.records import CollationRecord

log = logging.getLogger("collation.service")

MAX_LIMIT = 100


class ListQuerySchema(Schema):
    """The query of ``GET /collations``: ``status`` (one or several, comma-separated), ``page``, ``limit``."""

    status = fields.String(load_default=None)
    page = fields.Integer(load_default=1, validate=validate.Range(min=1, max=1_000_000))
    limit = fields.Integer(load_default=20, validate=validate.Range(min=1, max=MAX_LIMIT))


def parse_statuses(text: str | None) -> set[str] | None:
    """The statuses named by ``status=a,b``; None for all. Raises the 400 naming ``status``."""
    if not text:
        return None
    names = {s.strip() for s in text.split(",") if s.strip()}
    known = {s.value for s in CollationStatus}
    unknown = sorted(names - known)
    if unknown or not names:
        raise InputError(f"unknown status {', '.join(unknown)!s}; one of {', '.join(sorted(known))}", field="status")
    return names


def visible(record: CollationRecord, owner: str | None, tokens_set: bool) -> bool:
    """Whether a caller holding the token of hash ``owner`` (None: no token) may list ``record``."""
    if not tokens_set:
        return True
    return owner is not None and owner in record.owners


def item(store: DataStore, record: CollationRecord, base: str) -> dict[str, Any]:
    """One collation of the list: id, name (``default_name`` until it has one), witnesses (labels once
    prepared), status, progress, links."""
    cid = record.id
    witnesses = []
    for m, manifest in enumerate(record.request.manifests):
        try:
            doc = store.load_manuscript(cid, m)
        except StoreFormatError as exc:  # a damaged manuscript document: listed without its label
            log.warning("Collation %s: manuscript %d cannot be read: %s", cid, m, exc.message)
            doc = None
        witnesses.append({"index": m, "manifest": manifest, "label": doc.label if doc else None})
    links = urls.status_links(base, cid, record.usable)
    return {
        **record_summary(record),
        "name": record.display_name([w["label"] for w in witnesses]),
        "witnesses": witnesses,
        "links": {
            "status": links["self"],
            "view": links["view"],
            "concordance_view": links["concordance_view"],
            "concordance_csv": f"{links['self']}/concordance.csv",
        },
    }


@dataclass(frozen=True)
class Unreadable:
    """A record this release cannot read (``StoreFormatError``): kept in the cache by its version, so
    that it is logged once, and skipped by every listing."""

    key: str
    reason: str


def read_record(store: DataStore, cid: str) -> CollationRecord | Unreadable:
    """``store.load_record(cid)``, or an ``Unreadable`` naming it, logged (a record from a newer release,
    truncated, a JSON list): one bad object never takes the listing down for everyone."""
    try:
        return store.load_record(cid)
    except StoreFormatError as exc:
        key = f"{store.collation_prefix(cid)}record.json"
        log.warning("Collation %s is not listed: its record cannot be read: %s", cid, exc.message)
        return Unreadable(key, exc.message)


def current_records(
    store: DataStore, cache: DocumentCache, unreadable: list[Unreadable] | None = None
) -> Iterator[CollationRecord]:
    """Every collation's record, from one listing of the store's versions: a record whose version has
    not changed since the last call comes from ``cache`` (on an object store, one request instead of
    one per collation). Records this release cannot read are skipped (and added to ``unreadable``)."""
    for key, version in sorted(store.versions("collations/").items()):
        parts = key.split("/")
        if len(parts) != 3 or parts[2] != "record.json" or not parts[1].isalnum():
            continue
        try:
            found = cache.get_or_build(
                ("record", store.description, parts[1], version), partial(read_record, store, parts[1])
            )
        except CollationNotFound:  # deleted while listing: not listed
            continue
        if isinstance(found, Unreadable):
            if unreadable is not None:
                unreadable.append(found)
            continue
        yield found


def list_collations(
    store: DataStore,
    base: str,
    query: dict[str, Any],
    owner: str | None,
    tokens_set: bool,
    cache: DocumentCache | None = None,
) -> dict[str, Any]:
    """The page ``query["page"]`` of the visible collations, newest first (ties by id); records come
    through ``cache`` (``current_records``; default: a cache for this call only)."""
    statuses = parse_statuses(query.get("status"))
    records = []
    for record in current_records(store, cache if cache is not None else DocumentCache(RECORDS_CACHED)):
        if not visible(record, owner, tokens_set):
            continue
        if statuses is not None and record.status not in statuses:
            continue
        records.append(record)
    records.sort(key=lambda r: (r.created, r.id), reverse=True)
    page, limit = query["page"], query["limit"]
    chunk = records[(page - 1) * limit : page * limit]
    total = len(records)
    doc: dict[str, Any] = {
        "total": total,
        "page": page,
        "limit": limit,
        "items": [item(store, r, base) for r in chunk],
        "links": {},
    }
    params = f"limit={limit}" + (f"&status={query['status']}" if statuses else "")
    if page * limit < total:
        doc["links"]["next"] = f"{base}/collations?{params}&page={page + 1}"
    if page > 1:
        doc["links"]["prev"] = f"{base}/collations?{params}&page={page - 1}"
    return doc
