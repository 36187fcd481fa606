"""Experts' verdicts on pairs of illustrations: the assessment routes' plain functions.

A verdict is stored (``store.stored.Assessment``) and the propagated scores of its own pair of manuscripts
are recomputed at once from the stored N_S (``collation.jobs.finishing.apply_assessments``): nothing is
rescored. Each verdict is published as a W3C ``assessing`` annotation on the canonical link it judges.
"""

from __future__ import annotations

from typing import Any

from collation.core.errors import InputError
from collation.jobs.finishing import apply_assessments
from collation.publish.canonical import build_assessment
from collation.service import urls
from collation.service.results import check_id, check_pair, finished_record
from collation.store.datastore import DataStore
from collation.store.records import CollationRecord, now
from collation.store.stored import Assessment, ordered


def add_assessment(store: DataStore, cid: str, body: dict[str, Any], base: str) -> dict[str, Any]:
    """Stores an expert's verdict and recomputes the pair's propagated scores at once.

    Verdicts of a match category (exact, partial, semantic; ``confirmed`` is exact) become propagation
    seeds and ``none`` (``rejected``) ones stop being seeds (``collation.jobs.finishing.apply_assessments``);
    P_S is recomputed from the stored N_S, so nothing is rescored.
    """
    record = finished_record(store, check_id(cid))
    a, b = body["pair"]
    check_pair(record, a, b, field="pair")
    _check_region(store, record, a, body["source"], "source")
    _check_region(store, record, b, body["target"], "target")
    return with_links(_store(store, cid, [(a, b, body["source"], body["target"])], body)[0], cid, base)


def add_batch(store: DataStore, cid: str, body: dict[str, Any], base: str) -> dict[str, Any]:
    """``POST /collations/{id}/assessments/batch``: one verdict on every pair of ``members`` (a group of
    the concordance, or any regions of different manuscripts), stored together, P_S recomputed once."""
    record = finished_record(store, check_id(cid))
    members = sorted((m["manuscript"], m["index"]) for m in body["members"])
    pairs = [(a, b, i, j) for k, (a, i) in enumerate(members) for b, j in members[k + 1 :]]
    for a, b, _, _ in pairs:
        check_pair(record, a, b, field="members")
    for m, index in members:  # each member's manuscript read once, not once per pair it is in
        _check_region(store, record, m, index, "members")
    return {"id": cid, "items": [with_links(item, cid, base) for item in _store(store, cid, pairs, body)]}


def clear_assessments(store: DataStore, cid: str, query: dict[str, Any]) -> dict[str, Any]:
    """``DELETE /collations/{id}/assessments?pair=a,b&source=i&target=j``: removes every verdict on that
    correspondence (stored in either direction), so that it is unjudged again, and recomputes P_S."""
    record = finished_record(store, check_id(cid))
    a, b = query["pair"]
    check_pair(record, a, b, field="pair")
    link = {(a, b, query["source"], query["target"]), (b, a, query["target"], query["source"])}
    with store.locked(cid):
        items = store.load_assessments(cid)
        kept = [i for i in items if (*i.pair, i.source, i.target) not in link]
        store.save_assessments(cid, kept)
        apply_assessments(store, cid, {ordered(a, b)})
    return {"id": cid, "cleared": len(items) - len(kept)}


def _check_region(store: DataStore, record: CollationRecord, m: int, index: int, field: str) -> None:
    """Raises the 400 problem naming ``field`` when manuscript m has no region ``index``: it reads the
    manuscript's region list, not any pair's scores."""
    if store.load_manuscript(record.id, m).region(index) is None:
        raise InputError(f"manuscript {m} has no region {index}", field=field)


def _store(
    store: DataStore, cid: str, pairs: list[tuple[int, int, int, int]], body: dict[str, Any]
) -> list[Assessment]:
    """Appends one assessment per (a, b, source, target) with the body's verdict, then recomputes P_S."""
    with store.locked(cid):
        items = store.load_assessments(cid)
        added = [
            Assessment(
                id=f"{len(items) + k + 1}",
                pair=(a, b),
                source=i,
                target=j,
                verdict=body["verdict"],
                creator=body.get("creator"),
                note=body.get("note"),
                created=now(),
            )
            for k, (a, b, i, j) in enumerate(pairs)
        ]
        store.save_assessments(cid, items + added)
        apply_assessments(store, cid, {ordered(a, b) for a, b, _, _ in pairs})
    return added


def with_links(item: Assessment, cid: str, base: str) -> dict[str, Any]:
    """An assessment with its links and as a W3C ``assessing`` annotation on the canonical link (stored
    once, from the lower manuscript index)."""
    (a, b), source, target = item.ordered()
    self_url = urls.assessment_url(base, cid, item.id)
    link = urls.url_scheme(cid, base).render("link", link=f"{a}-{b}-{source}-{target}")
    assessor = {"type": "Person", "name": item.creator or "anonymous expert"}
    annotation = build_assessment(
        link, item.category, assessor=assessor, id=self_url, created=item.created, note=item.note
    )
    return {
        **item.to_dict(),
        "annotation": annotation,
        "links": {
            "self": self_url,
            "correspondences": urls.correspondences_url(base, cid, a, b),
        },
    }


def list_assessments(store: DataStore, cid: str, base: str) -> dict[str, Any]:
    """``GET /collations/{id}/assessments``: every assessment, oldest first."""
    store.load_record(check_id(cid))
    return {"id": cid, "items": [with_links(item, cid, base) for item in store.load_assessments(cid)]}
