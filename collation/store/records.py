"""What a collation record says: its status, its options, and the keys of cached work.

The steps of a collation (``Step``, ``StepKind``) are defined in ``collation.store.stepnames`` and
importable from here too. Everything here is plain data and pure functions, shared by the jobs
(which write records) and the API (which reads them).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any

from collation.core import defaults
from collation.core.settings import Settings
from collation.store.codecs import digest
from collation.store.datastore import transposed_features_key
from collation.store.stepnames import Step, StepKind

__all__ = [
    "ID_LENGTH",
    "TERMINAL",
    "CollationStatus",
    "Step",
    "StepKind",
    "chunk_count",
    "collation_id",
    "feature_keys",
    "is_terminal",
    "new_record",
    "now",
    "pair_key",
    "resolve_options",
    "second_features_key",
    "transposition_option",
    "usable",
]

ID_LENGTH = 16
"""Hex digits of a collation id."""


class CollationStatus(StrEnum):
    """Status of a collation (``record["status"]``)."""

    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        """Whether no job changes the collation any more."""
        return self in TERMINAL


TERMINAL = frozenset({CollationStatus.FINISHED, CollationStatus.FAILED, CollationStatus.CANCELLED})


def is_terminal(status: str) -> bool:
    """Whether a record's status (a string as stored) is terminal."""
    return CollationStatus(status).terminal


# --------------------------------------------------------------------------------------------------
# Records


def now(clock: Callable[[], dt.datetime] | None = None) -> str:
    """An ISO 8601 UTC timestamp to the second (``clock`` for tests)."""
    moment = clock() if clock is not None else dt.datetime.now(dt.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


NO_TRANSPOSITIONS = "none"
"""The ``transpositions`` value of a record that does not name one (every record made before the option)."""


def resolve_options(options: dict[str, Any] | None, settings: Settings) -> dict[str, Any]:
    """Fills the options a request left out with the defaults, so equal collations get equal ids.

    ``transpositions`` and ``partial`` are recorded only when they change the scores (not "none",
    true), as ``collation.engine.pipeline.check_options`` does: plain collations keep the records and the
    ids they had before these options existed.
    """
    options = dict(options or {})
    resolved = {
        "backbone": options.get("backbone") or settings.backbone,
        "similarity": options.get("similarity") or defaults.SIMILARITY,
        "normalization": options.get("normalization") or defaults.NORMALIZATION,
        "propagation": options.get("propagation") or defaults.PROPAGATION,
        "seed": int(options["seed"]) if options.get("seed") is not None else defaults.SEED,
        "kernel": defaults.KERNEL,
        # an explicit null scores every pair; left out: the engine's default
        "candidates": options.get("candidates", defaults.CANDIDATES),
    }
    value = options.get("transpositions") or defaults.TRANSPOSITIONS
    if value != NO_TRANSPOSITIONS:
        resolved["transpositions"] = value
    if options.get("partial", defaults.PARTIAL):
        resolved["partial"] = True
    return resolved


def transposition_option(options: dict[str, Any]) -> str:
    """The ``transpositions`` option of resolved options: "none", "mirror" or "all"."""
    return options.get("transpositions", NO_TRANSPOSITIONS)


def collation_id(manifests: Sequence[str], regions: dict | None, options: dict[str, Any]) -> str:
    """The id of a collation: a hash of its ordered manifests, its regions and its resolved options."""
    return digest({"manifests": list(manifests), "regions": regions or {}, "options": options}, ID_LENGTH)


def new_record(
    cid: str, request: dict[str, Any], options: dict[str, Any], settings: Settings, stamp: str | None = None
) -> dict:
    """The first record of a collation."""
    stamp = stamp or now()
    return {
        "id": cid,
        "created": stamp,
        "updated": stamp,
        "ended": None,
        "request": request,
        "options": options,
        "chunk_pairs": int(settings.chunk_pairs),
        "status": CollationStatus.QUEUED.value,
        "progress": {"stage": "queued", "done": 0, "total": len(request["manifests"])},
        "errors": [],
    }


def usable(doc: dict | None) -> bool:
    """A prepared manuscript with at least one region image."""
    return bool(doc and doc.get("regions") and doc.get("features_key"))


# --------------------------------------------------------------------------------------------------
# Keys of cached work


# collation.engine.cascade; absent: global top-k
CANDIDATE_METHOD = f"cascade-{defaults.CANDIDATES_WIDE}-{defaults.CANDIDATES_CORRIDOR}"


def pair_key(options: dict[str, Any], features0: str, features1: str) -> str:
    """Key of a pair's score matrix: both feature sets (in order) and every scoring parameter.

    ``candidates`` (pruning) enters the key only when set, so full matrices keep the keys they had
    before pruning existed, and a full matrix and a pruned one never share a key. With it goes the
    version of the candidate method (``CANDIDATE_METHOD``): a candidate set chosen by an older method
    is not reused as if it were the new one's.
    """
    parts = {
        "f0": features0,
        "f1": features1,
        "similarity": options["similarity"],
        "seed": options["seed"],
        "kernel": options["kernel"],
        "iterations": defaults.RANSAC_ITERATIONS,
        "v": 1,
    }
    if options.get("candidates") is not None:
        parts["candidates"] = int(options["candidates"])
        parts["candidate_method"] = CANDIDATE_METHOD
    for name in ("transpositions", "partial"):  # like candidates: in the key only when set
        if name in options:
            parts[name] = options[name]
    return digest(parts)


def second_features_key(options: dict[str, Any], features_key: str) -> str:
    """Key of the features a pair scores its second manuscript with: the plain ones, or with
    transpositions the transposition-major ones (``collation.engine.transpositions``)."""
    option = transposition_option(options)
    return features_key if option == NO_TRANSPOSITIONS else transposed_features_key(features_key, option)


def feature_keys(options: dict[str, Any], m: int, features_key: str) -> list[str]:
    """The feature sets the features step of manuscript ``m`` stores: the plain ones and, with
    transpositions, the transposed ones of every manuscript that can be the second of a pair (m > 0)."""
    second = second_features_key(options, features_key)
    return [features_key] if m == 0 or second == features_key else [features_key, second]


def chunk_count(pairs: int, chunk_pairs: int) -> int:
    """Scoring jobs of ``pairs`` pairs to score with ``chunk_pairs`` pairs each (at least one)."""
    return max(1, math.ceil(pairs / chunk_pairs))
