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
from collation.core.options import CollationOptions
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


def resolve_options(options: dict[str, Any] | None, settings: Settings) -> dict[str, Any]:
    """A request's options as its record stores them (``CollationOptions.to_record``): the ones it left
    out filled with the defaults (the deployment's backbone), so equal collations get equal ids.

    Raises:
        InputError: an option outside its rules, naming the field.
    """
    return CollationOptions.parse(options, backbone=settings.backbone).to_record()


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
        "chunk_pairs": chunk_pairs(CollationOptions.from_record(options), settings),
        "status": CollationStatus.QUEUED.value,
        "progress": {"stage": "queued", "done": 0, "total": len(request["manifests"])},
        "errors": [],
    }


S_FEATURES_CHUNK_PAIRS = 1 << 20
"""Pairs of one scoring job with s_features: a matrix product, thousands of pairs a millisecond."""


def chunk_pairs(options: CollationOptions, settings: Settings) -> int:
    """Pairs of one scoring job: ``settings.chunk_pairs`` (about 10 s of S_trans), or for s_features
    every pair of most manuscript pairs (``S_FEATURES_CHUNK_PAIRS``)."""
    return S_FEATURES_CHUNK_PAIRS if options.similarity == "s_features" else int(settings.chunk_pairs)


def usable(doc: dict | None) -> bool:
    """A prepared manuscript with at least one region image."""
    return bool(doc and doc.get("regions") and doc.get("features_key"))


# --------------------------------------------------------------------------------------------------
# Keys of cached work


def cascade_settings() -> dict[str, Any]:
    """Every setting that changes which candidate pairs the cascade chooses (``defaults.CASCADE_SETTINGS``),
    read when called: a candidate set chosen under other settings is never reused as if it were these'."""
    return {name: getattr(defaults, name) for name in defaults.CASCADE_SETTINGS}


def pair_key(options: CollationOptions, features0: str, features1: str) -> str:
    """Key of a pair's score matrix (and candidate set): both feature sets (in order) and every
    parameter that changes its content.

    ``candidates`` (pruning) enters the key only when it prunes, and with it every setting of the
    cascade (``cascade_settings``), so a full matrix and a pruned one never share a key and a candidate
    set chosen under other settings is never reused. ``transpositions`` and ``partial`` enter when set.
    """
    parts: dict[str, Any] = {
        "f0": features0,
        "f1": features1,
        "similarity": options.similarity,
        "seed": options.seed,
        "kernel": options.kernel,
        "iterations": defaults.RANSAC_ITERATIONS,
        "tolerance": defaults.RANSAC_TOLERANCE,
        "v": 2,
    }
    if options.pruned:
        parts["candidates"] = options.candidates
        parts["cascade"] = cascade_settings()
    stored = options.to_record()
    for name in ("transpositions", "partial"):
        if name in stored:
            parts[name] = stored[name]
    return digest(parts)


def second_features_key(options: CollationOptions, features_key: str) -> str:
    """Key of the features a pair scores its second manuscript with: the plain ones, or with
    transpositions the transposition-major ones (``collation.engine.transpositions``)."""
    if options.n_transpositions == 1:
        return features_key
    return transposed_features_key(features_key, options.transpositions)


def feature_keys(options: CollationOptions, m: int, features_key: str) -> list[str]:
    """The feature sets the features step of manuscript ``m`` stores: the plain ones and, with
    transpositions, the transposed ones of every manuscript that can be the second of a pair (m > 0)."""
    second = second_features_key(options, features_key)
    return [features_key] if m == 0 or second == features_key else [features_key, second]


def chunk_count(pairs: int, chunk_pairs: int) -> int:
    """Scoring jobs of ``pairs`` pairs to score with ``chunk_pairs`` pairs each (at least one)."""
    return max(1, math.ceil(pairs / chunk_pairs))
