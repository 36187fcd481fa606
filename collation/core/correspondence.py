"""One correspondence between two regions, the one shape every layer passes around.

The engine's command line (``correspondences.json``), the service (the annotation layers and the
correspondences document) and ``collation.publish`` (the W3C annotations) all build or read a
``Correspondence``; each writes its own external format from it at its edge.

Two numbers name a region, and they are kept apart:

- ``position``: where the region stands in its manuscript's list of regions (illustrations), as
  the scores see it: the row (source) or column (target) of a pair's S, N_S and P_S matrices. The
  command line's ``correspondences.json`` calls it ``index``.
- ``region``: the region's stable index, the ``index`` field of a stored region (``Region.index``),
  which link ids, URLs and assessments use. The two agree on the command line (an illustration's
  index is its position) but not in general, so ``positions`` maps one to the other once.

Shapes::

    Side(manuscript: int, position: int, region: int | None = None)
    Correspondence(
        source: Side,                     # rows of the scores
        target: Side,                     # columns of the scores
        S: float = nan,                   # raw score; NaN (or inf): unknown, left out of annotations
        N_S: float = nan,                 # normalized score
        P_S: float = nan,                 # propagated score
        rank: int | None = None,          # 1 = the source's best candidate; None: shown for its verdict
        cycle_consistent: bool = False,   # closes a 2-cycle (mutual best) or a 3-cycle
        cycles: frozenset[int] = {},      # which, where known (the command line): 2 and/or 3
        status: str = "proposed",         # proposed | confirmed | rejected
        verdict: str | None = None,       # the expert's category: exact | partial | semantic | none
        transposition: str | None = None, # of the target's region, the one that gave S; None: plain
        link_id: str | None = None,       # the link's id in URLs; None: its position in the list
        weak: bool = False,               # raw S under the floor, or a blank region (engine.weak)
    )

Nothing here checks values against manuscripts: ``collation.publish.parts.read_links`` does, where
correspondences meet the regions they name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

STATUSES = ("proposed", "confirmed", "rejected")
"""A correspondence's status: found by the engine, or confirmed or rejected by an expert's verdict."""

CYCLES = (2, 3)
"""The cycle lengths a correspondence may close: 2 (mutual best), 3 (through a third manuscript)."""


@dataclass(frozen=True)
class Side:
    """One end of a correspondence: a region of a manuscript, by its position in the manuscript's
    list (row or column of the scores) and, where known, its stable region index."""

    manuscript: int
    position: int
    region: int | None = None


@dataclass(frozen=True)
class Correspondence:
    """A region of one manuscript matched with a region of another, with its scores (module docstring)."""

    source: Side
    target: Side
    S: float = math.nan
    N_S: float = math.nan
    P_S: float = math.nan
    rank: int | None = None
    cycle_consistent: bool = False
    cycles: frozenset[int] = field(default_factory=frozenset)
    status: str = "proposed"
    verdict: str | None = None
    transposition: str | None = None
    link_id: str | None = None
    weak: bool = False

    def __post_init__(self) -> None:
        if not set(self.cycles) <= set(CYCLES):
            raise ValueError(f"cycles {sorted(self.cycles)} are not among {CYCLES}")
        if self.cycles and not self.cycle_consistent:
            raise ValueError("a correspondence that closes a cycle is cycle consistent")

    @property
    def key(self) -> tuple[int, int, int, int]:
        """(source manuscript, source position, target manuscript, target position): which pair of
        regions, in this direction."""
        return self.source.manuscript, self.source.position, self.target.manuscript, self.target.position
