"""The options of a collation: one frozen value, parsed once at each edge, holding every rule once.

The API's request body (``collation.service.schemas``), the command line (``collate match``) and a
stored record (``collation.store.records``) each build one ``CollationOptions``; everything after
that reads typed attributes. The value lists live here and nowhere else (the engine modules and the
API's schema take them from here), and so does every rule between options:

- ``partial`` needs ``similarity`` s_trans (only S_trans has a transform whose matched area can
  divide the score, docs/transpositions.md);
- ``transpositions`` other than "none" need s_trans or s_matching;
- ``candidates`` None scores every pair; s_features always scores every pair (it is a matrix
  product, cheaper than any pruning), so its candidates are ignored;
- 3-cycle propagation needs three or more manuscripts (``check_manuscripts``);
- ``weak_below`` unset learns the floor from the collation's own scores (``learns_floor``), falling back on
  the floor calibrated for the backbone, similarity and ``partial`` (``floor``) where too few pairs teach one.

Nothing here imports torch: the API process and the command line's parser use it as it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from collation.core import defaults
from collation.core.errors import InputError, OptionError
from collation.core.vocabulary import TRANSPOSITION_SETS

BACKBONES = ("efficientnet-lite0", "resnet50-conv4")
"""The backbones ``collation.engine.backbones.load_backbone`` builds."""

SIMILARITIES = ("s_trans", "s_matching", "s_features")
"""Every similarity of A.2."""

PRECISIONS = ("auto", "float32", "bfloat16")
RESOLVED_PRECISIONS = ("float32", "bfloat16")
"""What ``PRECISIONS`` resolve to on a machine (``engine.backbones.resolve_precision``): the arithmetic a
backbone computes in, a part of every features key."""
"""Arithmetic of the backbone (``Settings.feature_precision``, ``COLLATION_FEATURE_PRECISION``): ``auto`` follows
``collation.engine.backbones.compute_dtype``'s rule, the others force it. bfloat16 on a CPU without native
support is emulated: correct, slow."""

KERNELS = ("reference", "paper")
"""Final Gaussian of S_trans: "reference" exp(-e²/tol²) as the authors' code, "paper" exp(-e²/2tol²) (B.13)."""

NORMALIZATIONS = ("none", "softmax", "avg", "max", "softmax-avg", "softmax-max")
PROPAGATIONS = ("none", "2-cycles", "3-cycles")
ORIENTATIONS = ("forward", "backward", "both")
"""Direction of 3-cycles (A.4)."""

MAX_CANDIDATES = 100_000
MAX_SEED = 2**31 - 1
MAX_WEAK_BELOW = 2.0
"""S_trans and S_matching are at most 2 (S = S1 + S2, each at most 1), S_features at most 1."""
THREE_CYCLES_MIN_MANUSCRIPTS = 3

CHOICES = {
    "backbone": BACKBONES,
    "similarity": SIMILARITIES,
    "kernel": KERNELS,
    "normalization": NORMALIZATIONS,
    "propagation": PROPAGATIONS,
    "orientation": ORIENTATIONS,
    "transpositions": tuple(TRANSPOSITION_SETS),
}
"""Option -> its allowed values, for the options that take a name."""

RECORDED_WHEN_SET = {
    "orientation": defaults.ORIENTATION,
    "transpositions": "none",
    "partial": False,
    "weak_below": None,
}
"""Options a record holds only when they differ from these values: records, and so collation ids, made
before the option existed stay as they were."""


def check_option(option: str, value: Any, allowed: Sequence[str]) -> str:
    """Returns ``value`` if it is one of ``allowed``; else raises ``OptionError`` listing them."""
    if not isinstance(value, str) or value not in allowed:
        raise OptionError(option, value, tuple(allowed))
    return value


@dataclass(frozen=True)
class CollationOptions:
    """Every option of a collation, checked when built (``OptionError`` names the field).

    Attributes:
        backbone: the network that describes the illustrations (``BACKBONES``).
        similarity: S_trans, S_matching or S_features (A.2).
        seed: of the RANSAC draws, 0..2³¹-1.
        kernel: the final Gaussian of S_trans (``KERNELS``).
        normalization, propagation, orientation: of the correspondences (A.3-A.5).
        candidates: S_trans (or S_matching) only on each illustration's ``candidates`` best pairs
            (``collation.engine.cascade``); None scores every pair.
        transpositions: also score the second illustration mirrored ("mirror"), turned by quarter turns
            ("all") or mirrored and turned by ±15°, ±30° and ±45° ("turns"). None (unset): ``defaults.TRANSPOSITIONS``
            ("turns"), or "none" with s_features, which takes no transpositions.
        partial: partial-copy S_trans (``collation.engine.partial``).
        weak_below: matches whose raw S is below it are weak: flagged, and never join a concordance
            group (docs/concordance.md, "Weak matches"); 0 flags none. None (unset): the floor each
            collation learns from its own scores (``learns_floor``), with the floor calibrated for the
            backbone and similarity (``floor``) where a row has too few pairs to learn from. It changes no
            score, so no cached feature or score.
    """

    # in the order of the stored records (the status document shows them so)
    backbone: str = defaults.BACKBONE
    similarity: str = defaults.SIMILARITY
    normalization: str = defaults.NORMALIZATION
    propagation: str = defaults.PROPAGATION
    seed: int = defaults.SEED
    kernel: str = defaults.KERNEL
    candidates: int | None = defaults.CANDIDATES
    orientation: str = defaults.ORIENTATION
    transpositions: str | None = None
    partial: bool = defaults.PARTIAL
    weak_below: float | None = None

    def __post_init__(self) -> None:
        if self.transpositions is None:  # the default where the similarity takes transpositions
            default = "none" if self.similarity == "s_features" else defaults.TRANSPOSITIONS
            object.__setattr__(self, "transpositions", default)
        for name, allowed in CHOICES.items():
            value = getattr(self, name)
            if not isinstance(value, str) or value not in allowed:
                raise OptionError(name, value, allowed)
        if not _is_int(self.seed) or not 0 <= self.seed <= MAX_SEED:
            raise InputError(f"seed must be an integer from 0 to {MAX_SEED}, not {self.seed!r}", field="seed")
        if self.candidates is not None and (not _is_int(self.candidates) or not 1 <= self.candidates <= MAX_CANDIDATES):
            raise InputError(
                f"candidates must be an integer from 1 to {MAX_CANDIDATES}, or none to score every pair",
                field="candidates",
            )
        if not isinstance(self.partial, bool):
            raise InputError("partial must be true or false", field="partial")
        if self.partial and self.similarity != "s_trans":
            raise InputError(f"partial copies need similarity s_trans, not {self.similarity}", field="partial")
        if self.transpositions != "none" and self.similarity == "s_features":
            raise InputError("transpositions need similarity s_trans or s_matching", field="transpositions")
        if self.weak_below is not None and not _is_floor(self.weak_below):
            raise InputError(
                f"weak_below must be a number from 0 to {MAX_WEAK_BELOW}, or none for the calibrated floor",
                field="weak_below",
            )

    # -- the edges --------------------------------------------------------------------------------

    @classmethod
    def parse(cls, values: Mapping[str, Any] | None, *, backbone: str = defaults.BACKBONE) -> CollationOptions:
        """Options from a request or a command line: names as the attributes, absent ones default
        (``backbone``: the deployment's default backbone). An explicit null ``candidates`` scores every pair.

        Raises:
            InputError: an unknown option or a value outside its rules, naming the field (``OptionError``
                for a value outside a list).
        """
        values = dict(values or {})
        unknown = sorted(set(values) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise InputError(f"unknown option {unknown[0]!r}", field=unknown[0])
        present = {k: v for k, v in values.items() if v is not None or k == "candidates"}
        return cls(**{"backbone": backbone, **present})

    @classmethod
    def from_record(cls, stored: Mapping[str, Any]) -> CollationOptions:
        """The options of a stored record (``to_record``'s dict); a record without ``candidates`` scored
        every pair (it was made before pruning existed), one without ``transpositions`` none."""
        stored = {k: v for k, v in stored.items() if k != "transposition_names"}
        return cls(**{"candidates": None, "transpositions": RECORDED_WHEN_SET["transpositions"], **stored})

    def to_record(self) -> dict[str, Any]:
        """The options as a record stores them and a collation id hashes them: every option, but those of
        ``RECORDED_WHEN_SET`` only when set."""
        stored = dataclasses.asdict(self)
        for name, unset in RECORDED_WHEN_SET.items():
            if stored[name] == unset:
                del stored[name]
        return stored

    # -- what follows from them -------------------------------------------------------------------

    def check_manuscripts(self, count: int) -> None:
        """Raises ``InputError`` when ``count`` manuscripts cannot be collated with these options."""
        if self.propagation == "3-cycles" and count < THREE_CYCLES_MIN_MANUSCRIPTS:
            raise InputError("3-cycle propagation needs three or more manuscripts", field="propagation")

    @property
    def transposition_names(self) -> tuple[str, ...]:
        """The transpositions scored, "identity" first: T's values index this tuple."""
        return TRANSPOSITION_SETS[self.transpositions]

    @property
    def n_transpositions(self) -> int:
        return len(self.transposition_names)

    @property
    def scored_transpositions(self) -> int:
        """The most S_trans a pair costs: as drawn and each transposition with ``mirror``; as drawn and one
        chosen transposition with more (docs/transpositions.md)."""
        return min(self.n_transpositions, defaults.TRANSPOSITIONS_SCORED)

    @property
    def floor(self) -> float:
        """The floor of raw S under which a match is weak: ``weak_below``, else the one calibrated for the
        backbone, similarity and ``partial`` (``defaults.WEAK_BELOW``), else 0 (none is weak for its score)."""
        if self.weak_below is not None:
            return float(self.weak_below)
        return defaults.WEAK_BELOW.get((self.backbone, self.similarity, self.partial), 0.0)

    @property
    def learns_floor(self) -> bool:
        """Whether weak matches are judged against the collation's own null (``weak_below`` unset), the
        fixed ``floor`` then holding only where a row or column has too few pairs to learn from
        (``collation.engine.weak.learned_floor``); with ``weak_below`` set, the fixed floor alone."""
        return self.weak_below is None

    @property
    def pruned(self) -> bool:
        """Whether only candidate pairs are scored (s_features scores every pair)."""
        return self.candidates is not None and self.similarity != "s_features"

    def replace(self, **changes: Any) -> CollationOptions:
        return dataclasses.replace(self, **changes)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_floor(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= MAX_WEAK_BELOW
