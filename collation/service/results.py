"""Reading a collation's stored results: the lookup-or-problem helpers every read route shares.

``check_id`` and ``finished_record`` raise the 404 and 409 problems; ``pair_results`` orients a
pair's stored scores as asked. The API (``collations``, ``layers``) and the viewer (``viewer.data``)
build their documents on these.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from collation.core.errors import InputError
from collation.engine.concordance import verdict_category
from collation.engine.transpositions import INVERSES
from collation.engine.weak import weak_matches
from collation.service.problems import Conflict
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.records import CollationRecord, CollationStatus

ID_CHARS = frozenset("0123456789abcdef")

SCORE_ARRAYS = {"raw": "S", "normalized": "N_S", "propagated": "P_S"}
"""The stored array of each ``score`` query value."""


def check_id(cid: str) -> str:
    """A collation id is 16 lower-case hex digits; anything else is a 404 like an unknown id.

    Raises:
        CollationNotFound: not an id (404).
    """
    if len(cid) != 16 or not set(cid) <= ID_CHARS:
        raise CollationNotFound(f"no collation {cid!r}", field="id")
    return cid


def finished_record(store: DataStore, cid: str) -> dict:
    """The record of a finished collation.

    Raises:
        CollationNotFound: no such collation (404).
        Conflict: the collation is not finished (409).
    """
    record = store.load_record(check_id(cid))
    if record.status != CollationStatus.FINISHED:
        raise Conflict(f"collation {cid} is {record.status.value}, its results are not available", field="id")
    return record


def check_pair(record: CollationRecord, a: int, b: int, field: str = "pair") -> None:
    """Raises ``InputError`` (400, naming ``field``) for a manuscript that does not exist, ``Conflict``
    (409) for one that could not be read."""
    n = record.manuscript_count
    for m in (a, b):
        if m >= n:
            raise InputError(f"manuscript {m} does not exist: this collation has {n} (0..{n - 1})", field=field)
        if m not in record.usable:
            raise Conflict(f"manuscript {m} could not be read, so it has no correspondences", field=field)


def pair_results(store: DataStore, record: CollationRecord, a: int, b: int, field: str = "pair") -> dict[str, Any]:
    """Scores of manuscripts ``a`` and ``b`` oriented as asked (rows a, columns b) with their regions.

    Returns:
        ``{"S", "N_S", "P_S": (n_a, n_b) arrays, "weak": (n_a, n_b) bool, "cycles": {(row, column)},
        "regions0", "regions1", "transposition_names", "transpositions"}``: ``weak`` the weak matches (raw S
        under the options' floor, or a region stored ``blank``: ``collation.engine.weak``); with the
        ``transpositions`` option, the names of
        the option's transpositions and an (n_a, n_b) array of names, the transposition of the column's
        region that gave S (the inverse of the stored one when a > b: the column's region transposed
        so matches the row's); both None for plain collations.

    Raises:
        InputError: a manuscript that does not exist (400, naming ``field``).
        Conflict: a manuscript that could not be read, or missing results (409).
    """
    cid = record.id
    check_pair(record, a, b, field)
    lo, hi = min(a, b), max(a, b)
    res = store.load_results(cid, lo, hi)
    if res is None:
        raise Conflict(f"the results of manuscripts {lo} and {hi} are missing", field=field)
    arrays = {name: res[name] for name in ("S", "N_S", "P_S")}
    cycles = {tuple(p) for name in ("two_cycles", "three_cycles") for p in res[name].reshape(-1, 2).tolist()}
    names, transposed = None, None
    if "T" in res:
        names = list(record.options.transposition_names)
        labels = [INVERSES[name] for name in names] if a > b else names
        transposed = np.array(labels)[res["T"].astype(np.int64)]
    if a > b:
        arrays = {name: m.T for name, m in arrays.items()}
        cycles = {(j, i) for i, j in cycles}
        transposed = None if transposed is None else transposed.T
    regions0, regions1 = store.load_manuscript(cid, a)["regions"], store.load_manuscript(cid, b)["regions"]
    blank0, blank1 = ([bool(r.get("blank")) for r in regions] for regions in (regions0, regions1))
    return {
        **arrays,
        "weak": weak_matches(
            arrays["S"],
            record.options.floor,
            blank0,
            blank1,
            cycles=np.array(sorted(cycles), dtype=np.int64).reshape(-1, 2) if record.options.learns_floor else None,
        ),
        "cycles": cycles,
        "regions0": regions0,
        "regions1": regions1,
        "transposition_names": names,
        "transpositions": transposed,
    }


def top_candidates(matrix: np.ndarray, top: int) -> list[list[int]]:
    """For each row, the column indices of its best ``top`` scores, best first, ties by index.

    Unscored pairs (-inf, outside the candidate set of the ``candidates`` option) are never listed,
    so a row may have fewer than ``min(top, n1)`` candidates.
    """
    order = np.argsort(-matrix, axis=1, kind="stable")[:, :top]
    scored = np.isfinite(np.take_along_axis(matrix, order, axis=1))
    return [row[keep].tolist() for row, keep in zip(order, scored, strict=True)]


def assessment_items(store: DataStore, cid: str, a: int, b: int) -> dict[tuple[int, int], dict[str, Any]]:
    """The latest assessment on each (region index in a, region index in b)."""
    out = {}
    for item in store.load_assessments(cid):
        p, q = item["pair"]
        if (p, q) == (a, b):
            out[(item["source"], item["target"])] = item
        elif (p, q) == (b, a):
            out[(item["target"], item["source"])] = item
    return out


def assessment_verdicts(store: DataStore, cid: str, a: int, b: int) -> dict[tuple[int, int], str]:
    """The latest verdict on each (region index in a, region index in b), as the expert gave it."""
    return {key: item["verdict"] for key, item in assessment_items(store, cid, a, b).items()}


def assessment_categories(store: DataStore, cid: str, a: int, b: int) -> dict[tuple[int, int], str]:
    """The category of the latest verdict on each (region index in a, region index in b): ``exact``,
    ``partial``, ``semantic`` or ``none`` (``confirmed`` and ``rejected`` are read as ``exact`` and ``none``)."""
    return {key: verdict_category(item["verdict"]) for key, item in assessment_items(store, cid, a, b).items()}
