"""What a collation record says: its status, its options, and the keys of cached work.

The steps of a collation (``Step``, ``StepKind``) are defined in ``collation.store.stepnames`` and
importable from here too. Everything here is plain data and pure functions, shared by the jobs
(which write records) and the API (which reads them).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from collation.core import defaults
from collation.core.formats import STORE_FORMAT
from collation.core.options import CollationOptions
from collation.core.settings import Settings
from collation.core.vocabulary import TURNS, CollationStatus
from collation.store.codecs import digest
from collation.store.stepnames import Step, StepKind

__all__ = [
    "ID_LENGTH",
    "CollationRecord",
    "CollationRequest",
    "Progress",
    "Step",
    "StepKind",
    "chunk_count",
    "collation_id",
    "default_name",
    "feature_keys",
    "new_record",
    "now",
    "pair_key",
    "second_features_key",
]

ID_LENGTH = 16
"""Hex digits of a collation id."""


# --------------------------------------------------------------------------------------------------
# Records


def now(clock: Callable[[], dt.datetime] | None = None) -> str:
    """An ISO 8601 UTC timestamp to the second (``clock`` for tests)."""
    moment = clock() if clock is not None else dt.datetime.now(dt.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def collation_id(
    manifests: Sequence[str],
    regions: dict | None,
    options: CollationOptions,
    creator: str | None = None,
    access: str | None = None,
) -> str:
    """The id of a collation: a hash of its ordered manifests, its regions and its options as recorded
    (``CollationOptions.to_record``: an option at a value that changes nothing leaves the id alone).

    ``creator``, the hash of the token that asks (``service.auth.token_hash``), enters the hash when
    tokens are configured: another token's same request is then a collation of its own (its verdicts
    its own; features and scores are still shared, they are cached by content), and nobody can derive
    the id of someone else's collation from its request. ``access``, a hash of the IIIF Auth 2 access
    tokens the request carries (``jobs.access.tokens_digest``), makes it another collation than the
    same request without them (whose images were refused).
    """
    parts = {"manifests": list(manifests), "regions": regions or {}, "options": options.to_record()}
    if creator is not None:
        parts["creator"] = creator
    if access is not None:
        parts["access"] = access
    return digest(parts, ID_LENGTH)


@dataclass
class Progress:
    """How far a collation is: ``done`` of ``total`` in its current ``stage``."""

    stage: str
    done: int = 0
    total: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.stage, "done": int(self.done), "total": int(self.total)}


@dataclass(frozen=True)
class CollationRequest:
    """What the client asked for, as it asked (the status document shows it back).

    Attributes:
        manifests: the manifest URLs, in order: manuscript m is ``manifests[m]``.
        regions: the request's regions, by manuscript index as a string (see openapi.yaml).
        options: the options as the client gave them (the resolved ones are the record's ``options``).
        callback_url: where the final status is POSTed, if anywhere.
    """

    manifests: tuple[str, ...]
    regions: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    callback_url: str | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CollationRequest:
        return cls(
            tuple(data["manifests"]), data.get("regions") or {}, data.get("options") or {}, data.get("callback_url")
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "manifests": list(self.manifests),
            "regions": self.regions,
            "options": self.options,
            "callback_url": self.callback_url,
        }


@dataclass
class CollationRecord:
    """A collation's record, typed at the store's edge (``DataStore.load_record``, ``update_record``):
    the store keeps it as JSON (``to_json``), everything else reads attributes.

    Attributes:
        id: the collation id (``collation_id``).
        created, updated, ended: ISO 8601 UTC stamps (``ended`` None until it ends).
        request: what the client asked.
        options: the resolved options, every rule checked (stored as ``CollationOptions.to_record``).
        chunk_pairs: pairs per scoring job.
        status: ``CollationStatus``; progress: ``Progress``; errors: ``{"message": ...}`` of the collation.
        usable: the manuscripts in the results (set when it finishes; empty before).
        owners: hashes of the tokens that list it (``service.listing``); the first is its creator's.
        base_url: the API's URL as the client called it (links of the callback).
        name: what the collation is called: the request's ``name``, a rename (``PATCH``), or once every
            manifest is read, its witnesses' labels (``default_name``). None until then. Not part of the
            id; an optional key (records without one, format 1 included, read as None), so it needs no
            new store format: a release that does not know it ignores it.
    """

    id: str
    created: str
    updated: str
    request: CollationRequest
    options: CollationOptions
    chunk_pairs: int
    status: CollationStatus = CollationStatus.QUEUED
    progress: Progress = field(default_factory=lambda: Progress("queued"))
    errors: list[dict[str, Any]] = field(default_factory=list)
    ended: str | None = None
    usable: list[int] = field(default_factory=list)
    owners: list[str] = field(default_factory=list)
    base_url: str | None = None
    name: str | None = None

    def display_name(self, labels: Sequence[str | None]) -> str:
        """Its name, or until it has one, ``default_name`` of its witnesses' ``labels`` (None: not read yet)."""
        return self.name or default_name(labels, self.request.manifests)

    @property
    def manuscript_count(self) -> int:
        return len(self.request.manifests)

    @property
    def terminal(self) -> bool:
        return self.status.terminal

    @property
    def creator(self) -> str | None:
        """The hash of the token that created the collation; None when it was created without one. Only
        the first owner: records made before ids were salted with the creator (``collation_id``) list
        later the tokens that made the same request, which may read it but not change it."""
        return self.owners[0] if self.owners else None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CollationRecord:
        """A record as the store keeps it (keys absent from older records take their defaults)."""
        progress = data.get("progress") or {}
        return cls(
            id=data["id"],
            created=data["created"],
            updated=data["updated"],
            request=CollationRequest.from_json(data["request"]),
            options=CollationOptions.from_record(data["options"]),
            chunk_pairs=int(data["chunk_pairs"]),
            status=CollationStatus(data["status"]),
            progress=Progress(progress.get("stage", data["status"]), progress.get("done", 0), progress.get("total", 0)),
            errors=list(data.get("errors") or []),
            ended=data.get("ended"),
            usable=list(data.get("usable") or []),
            owners=list(data.get("owners") or []),
            base_url=data.get("base_url"),
            name=data.get("name"),
        )

    def to_json(self) -> dict[str, Any]:
        """The stored JSON: its format, the keys of the first record, then ``usable``, ``owners``,
        ``base_url`` and ``name`` once they are set."""
        stored = {
            "format": STORE_FORMAT,  # collation.core.formats; removed and checked by DataStore.load_record
            "id": self.id,
            "created": self.created,
            "updated": self.updated,
            "ended": self.ended,
            "request": self.request.to_json(),
            "options": self.options.to_record(),
            "chunk_pairs": self.chunk_pairs,
            "status": CollationStatus(self.status).value,  # also checks a status set as a string
            "progress": self.progress.to_json(),
            "errors": self.errors,
        }
        for name in ("usable", "owners", "base_url", "name"):
            if getattr(self, name):
                stored[name] = getattr(self, name)
        return stored


def new_record(
    cid: str, request: CollationRequest, options: CollationOptions, settings: Settings, stamp: str | None = None
) -> CollationRecord:
    """The first record of a collation."""
    stamp = stamp or now()
    return CollationRecord(
        id=cid,
        created=stamp,
        updated=stamp,
        request=request,
        options=options,
        chunk_pairs=chunk_pairs(options, settings),
        progress=Progress("queued", 0, len(request.manifests)),
    )


NAME_SEPARATOR = " · "
"""Between the witnesses' labels of a default name."""


def default_name(labels: Sequence[str | None], manifests: Sequence[str]) -> str:
    """A collation's name before anyone names it: its witnesses' labels in order, joined by
    ``NAME_SEPARATOR``; a witness not read yet (or without a label) is named by its manifest URL's last
    path part, e.g. ``["Physiologus (Bern)", None]`` of ``[..., "https://x/p3/manifest.json"]`` gives
    "Physiologus (Bern) · p3/manifest.json". At most ``NAME_LIMIT`` characters."""
    names = [
        label.strip() if label and label.strip() else _url_tail(url)
        for label, url in zip(labels, manifests, strict=True)
    ]
    name = NAME_SEPARATOR.join(names)
    return name if len(name) <= NAME_LIMIT else name[: NAME_LIMIT - 1] + "…"


NAME_LIMIT = 200
"""The longest name a collation may have (characters)."""


def _url_tail(url: str) -> str:
    """The last two path parts of a URL ("p3/manifest.json"), or the URL when it has no path."""
    parts = [p for p in url.split("?")[0].split("/")[3:] if p]
    return "/".join(parts[-2:]) or url


S_FEATURES_CHUNK_PAIRS = 1 << 20
"""Pairs of one scoring job with s_features: a matrix product, thousands of pairs a millisecond."""


def chunk_pairs(options: CollationOptions, settings: Settings) -> int:
    """Pairs of one scoring job: ``settings.workers.chunk_pairs`` (about 10 s of S_trans), or for s_features
    every pair of most manuscript pairs (``S_FEATURES_CHUNK_PAIRS``)."""
    return S_FEATURES_CHUNK_PAIRS if options.similarity == "s_features" else int(settings.workers.chunk_pairs)


# --------------------------------------------------------------------------------------------------
# Keys of cached work


def pair_key(
    options: CollationOptions, features0: str, features1: str, cascade: defaults.CascadeConfig = defaults.CASCADE
) -> str:
    """Key of a pair's score matrix (and candidate set): both feature sets (in order) and every
    parameter that changes its content.

    ``candidates`` (pruning) enters the key only when it prunes, and with it the cascade's settings
    (``cascade``, the value the cascade reads, whole), so a full matrix and a pruned one never share a
    key and a candidate set chosen under other settings is never reused. ``transpositions`` and
    ``partial`` enter when set, and with ``partial`` the floor of its divisor.
    """
    parts: dict[str, Any] = {
        "f0": features0,
        "f1": features1,
        "similarity": options.similarity,
        "seed": options.seed,
        "kernel": options.kernel,
        "iterations": defaults.RANSAC_ITERATIONS,
        "tolerance": defaults.RANSAC_TOLERANCE,
        # The format of the pair's arrays (matrix, winners, chunks, candidate pairs), which have no room for
        # one of their own (collation.core.formats): a release that changes them changes it, and then never
        # finds, so never misreads, arrays of another format.
        "v": 2,
    }
    if options.pruned:
        parts["candidates"] = options.candidates
        parts["cascade"] = dataclasses.asdict(cascade)
    stored = options.to_record()
    for name in ("transpositions", "partial"):
        if name in stored:
            parts[name] = stored[name]
    if options.partial:
        parts["partial_min_area"] = defaults.PARTIAL_MIN_AREA
    if options.n_transpositions > defaults.TRANSPOSITIONS_SCORED:  # only suspected pairs, at their likeliest
        parts["transpositions_scored"] = defaults.TRANSPOSITIONS_SCORED
        parts["transpose_cheap"] = [
            defaults.TRANSPOSE_SUSPECT_BELOW,
            defaults.TRANSPOSE_CHEAP_MARGIN,
            defaults.TRANSPOSE_PICK_FROM,
        ]
    return digest(parts)


def transposed_features_key(features_key: str, transpositions: str) -> str:
    """Key of a manuscript's features under every transposition of ``mirror``: its plain features key plus the
    option value, since the transposed images are exact pixel moves of the same images (docs/transpositions.md).
    ``all`` and ``turns`` describe transposed only what a pair chooses (``turned_features_key``)."""
    return f"{features_key}.{transpositions}"


def turned_features_key(pair: str) -> str:
    """Key of the transposed features a pair chose with ``all`` or ``turns`` (each second illustration under
    its likeliest transposition, ``pipeline.choose_transpositions``): the pair's key, which names both feature
    sets and every setting of the choice; the angles of ``turns`` (``TURNS``) are named too."""
    return f"{pair}.turned-{digest(TURNS)[:12]}"


def second_features_key(options: CollationOptions, features_key: str) -> str:
    """Key of the features a pair scores its second manuscript with: the plain ones, or with ``mirror`` the
    transposition-major ones (``collation.engine.transpositions``); with ``all`` and ``turns`` the plain ones,
    and the pair's own turned features (``turned_features_key``)."""
    if options.n_transpositions == 1 or options.n_transpositions > defaults.TRANSPOSITIONS_SCORED:
        return features_key
    return transposed_features_key(features_key, options.transpositions)


def feature_keys(options: CollationOptions, m: int, features_key: str) -> list[str]:
    """The feature sets the features step of manuscript ``m`` stores: the plain ones and, with ``mirror``,
    the transposed ones of every manuscript that can be the second of a pair (m > 0)."""
    second = second_features_key(options, features_key)
    return [features_key] if m == 0 or second == features_key else [features_key, second]


def chunk_count(pairs: int, chunk_pairs: int) -> int:
    """Scoring jobs of ``pairs`` pairs to score with ``chunk_pairs`` pairs each (at least one)."""
    return max(1, math.ceil(pairs / chunk_pairs))
