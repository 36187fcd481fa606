"""Reading a collation's stored results: the lookup-or-problem helpers every read route shares.

``check_id`` and ``finished_record`` raise the 404 and 409 problems; ``pair_results`` orients a
pair's stored scores as asked (``PairView``). The API (``collations``, ``annotations``) and the viewer
(``viewer.data``) build their documents on these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collation.core.errors import InputError
from collation.core.vocabulary import CollationStatus
from collation.engine.weak import weak_matches
from collation.service.problems import Conflict
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.records import CollationRecord
from collation.store.stored import Assessment, PreparedManuscript, StoredRegion, ordered

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


@dataclass(frozen=True)
class PairView:
    """A pair's results as the read routes use them: rows a, columns b, with both manuscripts' regions.

    ``S``, ``N_S``, ``P_S``: ``(n_a, n_b)``; ``weak``: ``(n_a, n_b)`` bool, the weak matches (raw S under the
    options' floor, or a region stored blank: ``collation.engine.weak``); ``cycles``: the (row, column)
    positions of every 2- and 3-cycle; with the ``transpositions`` option, ``transposition_names`` (the
    option's) and ``transpositions``, an (n_a, n_b) array of names, the transposition of the column's region
    that gave S (``PairResults.transpositions``); both None for plain collations.
    """

    S: np.ndarray
    N_S: np.ndarray
    P_S: np.ndarray
    weak: np.ndarray
    cycles: set[tuple[int, int]]
    doc0: PreparedManuscript
    doc1: PreparedManuscript
    transposition_names: list[str] | None
    transpositions: np.ndarray | None

    @property
    def regions0(self) -> tuple[StoredRegion, ...]:
        return self.doc0.regions

    @property
    def regions1(self) -> tuple[StoredRegion, ...]:
        return self.doc1.regions

    def scores(self, score: str) -> np.ndarray:
        """The matrix of a ``score`` query value (``raw``, ``normalized``, ``propagated``)."""
        return getattr(self, SCORE_ARRAYS[score])


def pair_results(store: DataStore, record: CollationRecord, a: int, b: int, field: str = "pair") -> PairView:
    """Scores of manuscripts ``a`` and ``b`` oriented as asked (rows a, columns b) with their regions.

    Raises:
        InputError: a manuscript that does not exist (400, naming ``field``).
        Conflict: a manuscript that could not be read, or missing results (409).
    """
    check_pair(record, a, b, field)
    res = store.load_results(record.id, a, b)
    if res is None:
        lo, hi = ordered(a, b)
        raise Conflict(f"the results of manuscripts {lo} and {hi} are missing", field=field)
    doc0, doc1 = store.load_manuscript(record.id, a), store.load_manuscript(record.id, b)
    names = list(record.options.transposition_names) if res.T is not None else None
    cycles = res.cycles()
    return PairView(
        S=res.S,
        N_S=res.N_S,
        P_S=res.P_S,
        weak=weak_matches(
            res.S,
            record.options.floor,
            doc0.blank,
            doc1.blank,
            cycles=np.array(sorted(cycles), dtype=np.int64).reshape(-1, 2) if record.options.learns_floor else None,
        ),
        cycles=cycles,
        doc0=doc0,
        doc1=doc1,
        transposition_names=names,
        transpositions=None if names is None else res.transpositions(tuple(names)),
    )


def top_candidates(matrix: np.ndarray, top: int) -> list[list[int]]:
    """For each row, the column indices of its best ``top`` scores, best first, ties by index.

    Unscored pairs (-inf, outside the candidate set of the ``candidates`` option) are never listed,
    so a row may have fewer than ``min(top, n1)`` candidates.
    """
    order = np.argsort(-matrix, axis=1, kind="stable")[:, :top]
    scored = np.isfinite(np.take_along_axis(matrix, order, axis=1))
    return [row[keep].tolist() for row, keep in zip(order, scored, strict=True)]


def assessment_items(store: DataStore, cid: str, a: int, b: int) -> dict[tuple[int, int], Assessment]:
    """The latest assessment on each (region index in a, region index in b)."""
    out = {}
    for item in store.load_assessments(cid):
        regions = item.on(a, b)
        if regions is not None:
            out[regions] = item
    return out


def assessment_verdicts(store: DataStore, cid: str, a: int, b: int) -> dict[tuple[int, int], str]:
    """The latest verdict on each (region index in a, region index in b), as the expert gave it."""
    return {key: item.verdict for key, item in assessment_items(store, cid, a, b).items()}


def assessment_categories(store: DataStore, cid: str, a: int, b: int) -> dict[tuple[int, int], str]:
    """The category of the latest verdict on each (region index in a, region index in b): ``exact``,
    ``partial``, ``semantic`` or ``none`` (``confirmed`` and ``rejected`` are read as ``exact`` and ``none``)."""
    return {key: item.category for key, item in assessment_items(store, cid, a, b).items()}
