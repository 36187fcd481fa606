"""Drafts of a collation-to-be (``/drafts``): what the New collation page holds before "Start", kept on the
server so that a reload, another browser or a colleague with the page's address finds the same work.

A draft is the pasted addresses (``text``), the regions the historian chose for each witness
(``regions``: manifest URL -> ``[{canvas, xywh}]``, the request's ``regions``) and each region editor's
state (``editors``: manifest URL -> its corrected boxes, its undo history and the step shown), so that
undo survives a reload. Its id (16 random hex digits) is the capability: whoever has the address reads
and replaces it; with ``COLLATION_API_TOKENS`` writing needs a token, as every write does. Stored as one
JSON object, ``drafts/<id>.json``, in the data store; never read by the workers. Removed once unchanged
for ``settings.store.draft_days`` days (``collation.store.retention.expire_drafts``).
"""

from __future__ import annotations

import json
import re
import secrets
from datetime import UTC, datetime
from typing import Any

from marshmallow import Schema, fields, validate

from collation.core.errors import CollationError
from collation.store.datastore import DataStore

DRAFT_ID = re.compile(r"^[0-9a-f]{16}$")
MAX_TEXT = 100_000
"""The pasted addresses' longest text (characters)."""
MAX_HISTORY = 200
"""Undo steps kept per editor; the oldest go first."""


class DraftNotFound(CollationError):
    """No draft has this id (never created, or not a draft id at all)."""

    http_status = 404


class BoxSchema(Schema):
    canvas = fields.String(required=True, validate=validate.Length(min=1, max=2048))
    xywh = fields.List(fields.Float(allow_nan=False), required=True, validate=validate.Length(equal=4))


class EditorSchema(Schema):
    """One region editor's state: its boxes (as the request's regions), undo snapshots and the one shown."""

    regions = fields.List(fields.Nested(BoxSchema), load_default=list, validate=validate.Length(max=5000))
    history = fields.List(fields.String(validate=validate.Length(max=200_000)), load_default=list)
    at = fields.Integer(load_default=0, validate=validate.Range(min=0))


class DraftSchema(Schema):
    """Body of ``POST /drafts`` and ``PUT /drafts/{id}``."""

    text = fields.String(load_default="", validate=validate.Length(max=MAX_TEXT))
    regions = fields.Dict(
        keys=fields.String(validate=validate.Length(max=2048)),
        values=fields.List(fields.Nested(BoxSchema), validate=validate.Length(max=5000)),
        load_default=dict,
    )
    editors = fields.Dict(
        keys=fields.String(validate=validate.Length(max=2048)),
        values=fields.Nested(EditorSchema, allow_none=True),
        load_default=dict,
    )


def _key(did: str) -> str:
    if not DRAFT_ID.match(did):
        raise DraftNotFound(f"no draft {did!r}: a draft id is 16 hexadecimal digits", field="id")
    return f"drafts/{did}.json"


def _document(did: str, body: dict[str, Any], created: str | None = None) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat(timespec="seconds")
    editors = {}
    for url, editor in body["editors"].items():
        if editor is not None:  # the newest steps, the one shown among them
            cut = max(0, len(editor["history"]) - MAX_HISTORY)
            editors[url] = {**editor, "history": editor["history"][cut:], "at": max(0, editor["at"] - cut)}
    return {"id": did, "created": created or now, "updated": now, **body, "editors": editors}


def create(store: DataStore, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /drafts``: a new draft of the validated ``body``."""
    did = secrets.token_hex(8)
    doc = _document(did, body)
    store.write(_key(did), json.dumps(doc).encode())
    return doc


def load(store: DataStore, did: str) -> dict[str, Any]:
    """``GET /drafts/{id}``. Raises DraftNotFound (404)."""
    data = store.read(_key(did))
    if data is None:
        raise DraftNotFound(f"no draft {did}", field="id")
    return json.loads(data)


def replace(store: DataStore, did: str, body: dict[str, Any]) -> dict[str, Any]:
    """``PUT /drafts/{id}``: the draft becomes ``body`` (the last writer wins). Raises DraftNotFound (404)."""
    doc = _document(did, body, created=load(store, did)["created"])
    store.write(_key(did), json.dumps(doc).encode())
    return doc
