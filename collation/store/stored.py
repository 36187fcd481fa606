"""The stored documents of a collation other than its record, typed at the store's edge.

Like ``CollationRecord``, each is a frozen value that the data store reads and writes; the JSON and
arrays they are stored as keep their shape (``to_dict`` gives back what ``from_dict`` read), so the
store's format does not change:

- ``PreparedManuscript`` (``manuscripts/<m>.json``): what the prepare step read of one manuscript,
  its regions (``StoredRegion``) with their image digests, and the key of their features;
- ``PairResults`` (``results/<a>-<b>.npz``): the scores of a pair of manuscripts, stored once with the
  lower manuscript first, and ``oriented(a, b)`` to read them either way round;
- ``Assessment`` (``assessments.json``, one item each): an expert's verdict on a pair of regions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from collation.core.vocabulary import INVERSES, verdict_category

# --------------------------------------------------------------------------------------------------
# A prepared manuscript


@dataclass(frozen=True)
class StoredRegion:
    """One illustration of a prepared manuscript: where it is (``collation.iiif.regions.Region``'s fields)
    and the content digest of its stored image; ``blank`` when nothing is drawn on it
    (``collation.engine.weak.is_blank``: its matches are weak)."""

    index: int
    canvas_id: str
    canvas_index: int
    xywh: tuple[int, int, int, int]
    digest: str
    label: str = ""
    annotation_id: str | None = None
    score: float | None = None
    """The detector's score, for detected regions."""
    blank: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StoredRegion:
        x, y, w, h = (int(v) for v in data["xywh"])
        return cls(
            index=int(data["index"]),
            canvas_id=str(data["canvas_id"]),
            canvas_index=int(data["canvas_index"]),
            xywh=(x, y, w, h),
            digest=str(data.get("digest") or ""),
            label=str(data.get("label") or ""),
            annotation_id=data.get("annotation_id"),
            score=float(data["score"]) if data.get("score") is not None else None,
            blank=bool(data.get("blank")),
        )

    def to_dict(self) -> dict[str, Any]:
        """The stored form: ``Region.to_dict()`` plus ``digest``, and ``blank`` only when true."""
        data: dict[str, Any] = {
            "index": self.index,
            "canvas_id": self.canvas_id,
            "canvas_index": self.canvas_index,
            "xywh": list(self.xywh),
            "label": self.label,
            "annotation_id": self.annotation_id,
        }
        if self.score is not None:
            data["score"] = self.score
        data["digest"] = self.digest
        if self.blank:
            data["blank"] = True
        return data


@dataclass(frozen=True)
class PreparedManuscript:
    """What the prepare step read of manuscript ``index`` of a collation.

    ``regions`` are those whose image could be read; ``regions_source`` says where they came from
    (``annotations``, ``detected``, ``given`` or ``whole_canvases``) and ``regions_note`` the detection's
    line; ``errors`` are ``{"message", "canvas"?, "region"?}``; ``features_key`` keys the regions' features
    and ``precision`` names the backbone's arithmetic the key was made for (``float32`` or ``bfloat16``).
    """

    index: int
    manifest: str
    """The manifest's URL as given."""
    manifest_id: str | None = None
    label: str | None = None
    version: int | None = None
    regions: tuple[StoredRegion, ...] = ()
    regions_source: str | None = None
    regions_note: str | None = None
    errors: tuple[dict[str, Any], ...] = ()
    features_key: str | None = None
    precision: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PreparedManuscript:
        return cls(
            index=int(data["index"]),
            manifest=str(data["manifest"]),
            manifest_id=data.get("manifest_id"),
            label=data.get("label"),
            version=data.get("version"),
            regions=tuple(StoredRegion.from_dict(r) for r in data.get("regions") or ()),
            regions_source=data.get("regions_source"),
            regions_note=data.get("regions_note"),
            errors=tuple(data.get("errors") or ()),
            features_key=data.get("features_key"),
            precision=data.get("precision"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "manifest": self.manifest,
            "manifest_id": self.manifest_id,
            "label": self.label,
            "version": self.version,
            "regions": [r.to_dict() for r in self.regions],
            "regions_source": self.regions_source,
            "regions_note": self.regions_note,
            "errors": list(self.errors),
            "features_key": self.features_key,
            "precision": self.precision,
        }

    @property
    def usable(self) -> bool:
        """At least one region image, and the key of its features: the manuscript can be scored."""
        return bool(self.regions and self.features_key)

    def positions(self) -> dict[int, int]:
        """Region index -> its position among ``regions``: the row (or column) of the pair matrices."""
        return {region.index: position for position, region in enumerate(self.regions)}

    def region(self, index: int) -> StoredRegion | None:
        """The region of this index, or None."""
        return next((r for r in self.regions if r.index == index), None)

    @property
    def digests(self) -> list[str]:
        return [r.digest for r in self.regions]

    @property
    def blank(self) -> list[bool]:
        return [r.blank for r in self.regions]

    def replace(self, **changes: Any) -> PreparedManuscript:
        return dataclasses.replace(self, **changes)


# --------------------------------------------------------------------------------------------------
# The results of a pair of manuscripts


@dataclass(frozen=True)
class PairResults:
    """The scores of manuscripts ``a`` and ``b`` (rows a, columns b), as stored with a < b
    (``collation.jobs.finishing``) or read the other way round (``oriented``).

    ``S``, ``N_S``, ``P_S``: ``(n_a, n_b)``; ``two_cycles``, ``three_cycles``, ``auto_seeds``, ``seeds``:
    ``(k, 2)`` positions; ``T``: with transpositions, the ``(n_a, n_b)`` int8 index into the option's
    transposition names of the transposition of b's region that gave S, else None.
    """

    a: int
    b: int
    S: np.ndarray
    N_S: np.ndarray
    P_S: np.ndarray
    two_cycles: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    three_cycles: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    auto_seeds: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    seeds: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    T: np.ndarray | None = None
    reversed: bool = False
    """Read the other way round from how it is stored (b < a): T's names are then inverses."""

    ARRAYS = ("S", "N_S", "P_S", "two_cycles", "three_cycles", "auto_seeds", "seeds", "T")

    @classmethod
    def from_arrays(cls, a: int, b: int, arrays: dict[str, np.ndarray]) -> PairResults:
        return cls(a, b, **{name: arrays[name] for name in cls.ARRAYS if name in arrays})

    def arrays(self) -> dict[str, np.ndarray]:
        """The stored arrays by name (``T`` only with transpositions)."""
        out = {name: getattr(self, name) for name in self.ARRAYS}
        return {name: value for name, value in out.items() if value is not None}

    def cycles(self) -> set[tuple[int, int]]:
        """The (row, column) positions of every 2- and 3-cycle."""
        return {tuple(p) for cycles in (self.two_cycles, self.three_cycles) for p in cycles.reshape(-1, 2).tolist()}

    def transpositions(self, names: tuple[str, ...]) -> np.ndarray | None:
        """``(n_a, n_b)`` names of T's entries (``names``: the option's transpositions), or None: the
        transposition of b's region that matches a's region, so the inverse of the stored one when the
        results are read the other way round (``core.vocabulary.INVERSES``)."""
        if self.T is None:
            return None
        labels = [INVERSES[name] for name in names] if self.reversed else list(names)
        return np.array(labels)[self.T.astype(np.int64)]

    def oriented(self, a: int, b: int) -> PairResults:
        """These results with rows ``a`` and columns ``b``: transposed when asked the other way round.

        ``transpositions(names)`` then names, for each (row of a, column of b), the inverse of the stored
        transposition.
        """
        if (a, b) == (self.a, self.b):
            return self
        if (a, b) != (self.b, self.a):
            raise ValueError(f"results of manuscripts {self.a} and {self.b} cannot be read as {a} and {b}")
        swap = lambda pairs: pairs.reshape(-1, 2)[:, ::-1].copy()  # noqa: E731
        return PairResults(
            a,
            b,
            self.S.T,
            self.N_S.T,
            self.P_S.T,
            swap(self.two_cycles),
            swap(self.three_cycles),
            swap(self.auto_seeds),
            swap(self.seeds),
            None if self.T is None else self.T.T,
            not self.reversed,
        )


def ordered(a: int, b: int) -> tuple[int, int]:
    """The order a pair of manuscripts is stored in: the lower index first (results, canonical links)."""
    return (a, b) if a < b else (b, a)


# --------------------------------------------------------------------------------------------------
# An expert's verdict


@dataclass(frozen=True)
class Assessment:
    """An expert's verdict on region ``source`` of manuscript ``pair[0]`` and region ``target`` of
    ``pair[1]`` (region indices, not positions), as the expert gave it (either way round)."""

    id: str
    pair: tuple[int, int]
    source: int
    target: int
    verdict: str
    """As given: a category or one of its aliases (``core.vocabulary.VERDICTS``)."""
    creator: str | None = None
    note: str | None = None
    created: str | None = None

    @property
    def category(self) -> str:
        """The verdict's category (``confirmed`` is ``exact``, ``rejected`` ``none``)."""
        return verdict_category(self.verdict)

    def ordered(self) -> tuple[tuple[int, int], int, int]:
        """``((a, b), i, j)`` with a < b: the pair as results and canonical links store it, and the regions
        in that order."""
        (a, b), i, j = self.pair, self.source, self.target
        return ((a, b), i, j) if a < b else ((b, a), j, i)

    def on(self, a: int, b: int) -> tuple[int, int] | None:
        """(region of a, region of b) when this verdict is about manuscripts a and b (either way round)."""
        if self.pair == (a, b):
            return self.source, self.target
        if self.pair == (b, a):
            return self.target, self.source
        return None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Assessment:
        a, b = data["pair"]
        return cls(
            id=str(data["id"]),
            pair=(int(a), int(b)),
            source=int(data["source"]),
            target=int(data["target"]),
            verdict=str(data["verdict"]),
            creator=data.get("creator"),
            note=data.get("note"),
            created=data.get("created"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The stored form (with its ``category``, for readers of the store's files)."""
        return {
            "id": self.id,
            "pair": list(self.pair),
            "source": self.source,
            "target": self.target,
            "verdict": self.verdict,
            "category": self.category,
            "creator": self.creator,
            "note": self.note,
            "created": self.created,
        }
