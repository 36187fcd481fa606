"""IIIF Collections (Presentation 2.1 and 3.0): the manifests a library groups under one address.

A historian often has the address of a collection ("the Physiologus manuscripts of this library")
rather than of each manifest. ``collection_members`` lists what it holds, so that the workspace can
offer its manifests as witnesses; nested collections are listed apart and not followed (one fetch
per inspection, like a manifest's).

- 2.1: ``@type: sc:Collection`` with ``manifests`` (and ``collections``), or ``members`` whose
  ``@type`` says which;
- 3.0: ``type: Collection`` with ``items`` of type ``Manifest`` or ``Collection``.
"""

from __future__ import annotations

from typing import Any

from collation.iiif.model import as_list, bare, json_id, json_type, label_text

MAX_MEMBERS = 1000
"""Members listed at most (a whole library's collection can list tens of thousands)."""


def is_collection(doc: Any) -> bool:
    """Whether a parsed document is a IIIF Collection (either version)."""
    if not isinstance(doc, dict):
        return False
    kind = bare(json_type(doc))
    return kind == "collection" or (not kind and ("manifests" in doc or "collections" in doc))


def collection_members(doc: Any, *, url: str) -> dict[str, Any] | None:
    """What a Collection lists, or None when ``doc`` is not a Collection.

    Returns:
        ``{"collection": {id, url, label, version}, "manifests": [{id, label}], "collections":
        [{id, label}], "summary": {manifests, collections, listed}}``: members in their order, those
        without an id left out, at most ``MAX_MEMBERS`` of each.
    """
    if not is_collection(doc):
        return None
    version = 3 if "items" in doc or "id" in doc else 2
    manifests: list[dict[str, Any]] = []
    collections: list[dict[str, Any]] = []
    if version == 3:
        members = as_list(doc.get("items"))
    else:  # 2.1: typed ``members``, or the older ``manifests`` and ``collections`` lists
        members = as_list(doc.get("members"))
        members += [{"@type": "sc:Manifest", **m} if isinstance(m, dict) else m for m in as_list(doc.get("manifests"))]
        members += [
            {"@type": "sc:Collection", **c} if isinstance(c, dict) else c for c in as_list(doc.get("collections"))
        ]
    for member in members:
        member_id = json_id(member)
        if member_id is None or not member_id.startswith(("http://", "https://")):
            continue
        entry = {"id": member_id, "label": label_text(member.get("label")) if isinstance(member, dict) else ""}
        kind = bare(json_type(member)) if isinstance(member, dict) else "manifest"
        target = collections if kind == "collection" else manifests
        target.append(entry)
    return {
        "collection": {
            "id": json_id(doc) or url,
            "url": url,
            "label": label_text(doc.get("label")),
            "version": version,
        },
        "manifests": manifests[:MAX_MEMBERS],
        "collections": collections[:MAX_MEMBERS],
        "summary": {
            "manifests": len(manifests),
            "collections": len(collections),
            "listed": min(len(manifests), MAX_MEMBERS),
        },
    }
