"""The service's words, each written once: expert verdicts and their labels, collation statuses, and
the transpositions with their inverses.

Every layer reads them from here, the API and the io workers included, so none of them needs the
engine (and torch) to know what "rot90" undoes or what "confirmed" means. Plain data and pure
functions: the standard library only.
"""

from __future__ import annotations

from enum import StrEnum

from collation.core.errors import InputError

# --------------------------------------------------------------------------------------------------
# Expert verdicts (docs/annotations.md, docs/concordance.md)

CATEGORIES = ("exact", "partial", "semantic", "none")
"""Expert verdicts, as in the ``assessing`` annotations."""
MATCH_CATEGORIES = ("exact", "partial", "semantic")
"""Verdicts that say the two illustrations correspond: they seed the propagation and link groups."""
CATEGORY_LABELS = {
    "exact": "exact copy",
    "partial": "partial copy",
    "semantic": "same subject (different composition)",
    "none": "no match",
}
"""Each category in the historian's words."""
VERDICT_ALIASES = {"confirmed": "exact", "rejected": "none"}
"""The first API's verdicts, still accepted."""
VERDICTS = CATEGORIES + tuple(VERDICT_ALIASES)
"""Every verdict the API accepts."""


def verdict_category(verdict: str) -> str:
    """The category of a verdict: aliases resolved (``confirmed`` -> ``exact``, ``rejected`` -> ``none``).

    Raises:
        InputError: not a verdict.
    """
    category = VERDICT_ALIASES.get(verdict, verdict)
    if category not in CATEGORIES:
        raise InputError(f"verdict {verdict!r} is not one of {VERDICTS}", field="verdict")
    return category


def is_match(verdict: str) -> bool:
    """Whether a verdict (or its alias) says the two illustrations correspond."""
    return verdict_category(verdict) in MATCH_CATEGORIES


# --------------------------------------------------------------------------------------------------
# Collation statuses


class CollationStatus(StrEnum):
    """Status of a collation (``CollationRecord.status``; stored as its value)."""

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

# --------------------------------------------------------------------------------------------------
# Transpositions (docs/transpositions.md)

TURNS = ("rot15", "rot345", "rot30", "rot330", "rot45", "rot315")
"""Turns of any angle (``rotN``: N degrees counter-clockwise, in the frame of the illustration, the corners
filled with its paper colour): ±15°, ±30° and ±45°, the slants copyists give a composition."""

TRANSPOSITION_NAMES = ("identity", "mirror", "rot90", "rot180", "rot270", "flip", *TURNS)
"""Every transposition, by name: as drawn; horizontal mirror; turned 90°, 180°, 270° counter-clockwise;
vertical mirror; the small turns of ``TURNS``. Each is applied to the second illustration of a pair; T's
values index the option's own list (``TRANSPOSITION_SETS``)."""

TRANSPOSITION_SETS = {
    "none": TRANSPOSITION_NAMES[:1],
    "mirror": TRANSPOSITION_NAMES[:2],
    "all": TRANSPOSITION_NAMES[:6],
    "turns": (*TRANSPOSITION_NAMES[:2], *TURNS),
}
"""The values of the ``transpositions`` option and the transpositions each one scores."""

INVERSES = {
    "identity": "identity",
    "mirror": "mirror",
    "rot90": "rot270",
    "rot180": "rot180",
    "rot270": "rot90",
    "flip": "flip",
    "rot15": "rot345",
    "rot345": "rot15",
    "rot30": "rot330",
    "rot330": "rot30",
    "rot45": "rot315",
    "rot315": "rot45",
}
"""The transposition that undoes each one: what T says when the pair is read the other way round
(illustration i of a, transposed by ``INVERSES[name]``, matches illustration j of b)."""

TRANSPOSITION_LABELS = {
    "identity": None,
    "mirror": "mirrored copy",
    "rot90": "turned copy",
    "rot180": "turned copy",
    "rot270": "turned copy",
    "flip": "vertically mirrored copy",
    **{name: "turned copy" for name in TURNS},
}
"""What a correspondence's ``transposition`` (``TRANSPOSITION_NAMES``: the one that
made the match) is called in its annotations' tagging body; None (as drawn) adds no body. Each name
reads the same either way round (a mirror's inverse is a mirror, a turn's a turn), so both ends of
a link carry the same words."""
