"""A collation's stages, in order, as plain functions: one pipeline for the command line and the service.

The command line runs them in one process (``run_collation``); the service's jobs
(``collation.jobs.steps``) run the same functions in the same order on the same data, one step each:

    describe           images -> features, and the transposed features of a second manuscript   features step
    find_candidates    a pair's features -> the pairs whose S is computed (the cascade)           plan step
    score_candidates   features, pairs -> S of each pair and the transposition that won           chunk steps
    assemble           the pairs' scores -> the (n0, n1) S and T of the manuscript pair            finalize step
    correspond         S of every manuscript pair -> N_S, 2- and 3-cycles, P_S                     finalize step

Every stage takes the collation's ``CollationOptions`` (``collation.core.options``), parsed once where
the collation came in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from collation.core.errors import InputError
from collation.core.options import CollationOptions
from collation.engine.backbones import Backbone, load_backbone, resolve_device, resolve_precision
from collation.engine.candidates import scattered
from collation.engine.cascade import (
    Suspects,
    cascade_scores,
    cheap_scores,
    coarse_features,
    likely_transpositions,
    select_candidates,
    suspect_transposed,
)
from collation.engine.correspondences import PairResult, collate
from collation.engine.features import MultiScaleFeatures, ProgressCallback, extract_features, extract_square_features
from collation.engine.illustrations import Illustration
from collation.engine.similarity import all_pairs, score_pairs, transposition_count
from collation.engine.transpositions import (
    cheap_turned_features,
    chosen_turned_features,
    extract_transposed_features,
    picks_transpositions,
)
from collation.engine.weak import is_blank

Stage = Callable[[str, int, int], None]
"""Progress of a named stage: ``stage(name, done, total)``."""

FEATURES_DTYPE = torch.float32
"""Storage type of the descriptors, the same for the command line and the service (so both give the same
scores); ``collate match --float16`` halves their memory and moves scores by about 1e-3."""


# --------------------------------------------------------------------------------------------------
# The stages


def describe(
    images: Sequence[Image.Image],
    backbone: Backbone,
    options: CollationOptions,
    *,
    dtype: torch.dtype = FEATURES_DTYPE,
    progress: ProgressCallback | None = None,
) -> MultiScaleFeatures:
    """The features of a manuscript's illustrations: multi-scale maps (B.3), or square maps for s_features."""
    extract = extract_square_features if options.similarity == "s_features" else extract_features
    return extract(images, backbone, dtype=dtype, progress=progress)


def describe_transposed(
    images: Sequence[Image.Image],
    backbone: Backbone,
    options: CollationOptions,
    plain: MultiScaleFeatures,
    *,
    turns: np.ndarray | None = None,
    dtype: torch.dtype = FEATURES_DTYPE,
    progress: ProgressCallback | None = None,
) -> MultiScaleFeatures:
    """The transposed features a manuscript is scored with as the second of a pair.

    ``plain`` itself without transpositions; with ``mirror`` the ``T * n`` illustrations, transposition-major
    (``extract_transposed_features``); with more (``picks_transpositions``: ``all``, ``turns``) the n
    illustrations each under the transposition ``turns`` ``(n,)`` chose for it (``choose_transpositions``),
    empty where it is 0 (``chosen_turned_features``).
    """
    if options.n_transpositions == 1:
        return plain
    if picks_transpositions(options.transpositions):
        if turns is None:
            raise InputError("the transpositions chosen per illustration are needed", field="turns")
        return chosen_turned_features(images, backbone, options.transpositions, turns, dtype=dtype, progress=progress)
    return extract_transposed_features(
        images, backbone, options.transpositions, plain=plain, dtype=dtype, progress=progress
    )


@dataclass(frozen=True)
class Candidates:
    """The pairs of one manuscript pair whose S is computed, and the cheap score of each.

    Attributes:
        pairs: ``(P, 2)`` int64 row-major pairs (i, j).
        cheap: ``(P,)`` float64 the cheap score of each pair (``cascade.cheap_scores``, the best over the
            transpositions of the second features given): the cascade's own, or with every pair a candidate
            computed only when ``suspects`` needs it (``picks_transpositions``); None otherwise.
        shape: ``(n0, n1)`` illustrations of the two manuscripts.
    """

    pairs: np.ndarray
    cheap: np.ndarray | None
    shape: tuple[int, int]


def find_candidates(
    feats0: MultiScaleFeatures,
    feats1: MultiScaleFeatures,
    options: CollationOptions,
    *,
    progress: ProgressCallback | None = None,
) -> Candidates:
    """The pairs whose S is computed (``Candidates``): the cascade's candidates (``options.candidates`` per
    illustration and direction), or every pair; with their cheap scores, which ``suspects`` reads.

    Args:
        feats1: the second manuscript's features from ``describe_transposed`` (``mirror``), or its plain ones
            (no transpositions, or ``picks_transpositions``: the transposed ones are chosen after,
            ``choose_transpositions``).
    """
    picks = picks_transpositions(options.transpositions)
    t = 1 if picks else options.n_transpositions
    _, n1 = transposition_count(feats1, t)
    shape = (len(feats0), n1)
    if options.pruned:
        cheap = cascade_scores(
            feats0, feats1, options.candidates, t, seed=options.seed, partial=options.partial, progress=progress
        )
        pairs = select_candidates(cheap, options.candidates)
        return Candidates(pairs, cheap[pairs[:, 0], pairs[:, 1]], shape)
    pairs = all_pairs(*shape).numpy()
    if not picks:
        return Candidates(pairs, None, shape)
    coarse0, coarse1 = coarse_features(feats0), coarse_features(feats1)  # every pair's cheap score as drawn
    cheap = cheap_scores(coarse0, coarse1, pairs, 1, seed=options.seed, partial=options.partial)
    return Candidates(pairs, cheap, shape)


def suspects(found: Candidates) -> Suspects:
    """With ``picks_transpositions``: which second illustrations the candidates do not match well as drawn
    (``cascade.suspect_transposed`` on their cheap scores as drawn), the only ones described and scored
    transposed."""
    if found.cheap is None:
        raise InputError("the candidates' cheap scores are needed to suspect transpositions", field="cheap")
    return suspect_transposed(found.pairs, found.cheap, found.shape)


def choose_transpositions(
    feats0: MultiScaleFeatures,
    images1: Sequence[Image.Image],
    backbone: Backbone,
    pairs: np.ndarray,
    suspected: Suspects,
    options: CollationOptions,
    *,
    dtype: torch.dtype = FEATURES_DTYPE,
) -> tuple[np.ndarray, np.ndarray]:
    """``(P, 3)`` int64: the candidate ``pairs`` (i, j) and the transposition t S_trans also scores each under
    (0: as drawn only), and ``(n1,)`` the transposition chosen for each second illustration (``turns`` of
    ``describe_transposed``): the suspected illustrations are described transposed at the query scale
    (``cheap_turned_features``) and ``cascade.likely_transpositions`` picks."""
    cheap_maps = cheap_turned_features(images1, backbone, options.transpositions, suspected.columns, dtype=dtype)
    turns, chosen = likely_transpositions(
        feats0, cheap_maps, pairs, suspected, options.n_transpositions, seed=options.seed, partial=options.partial
    )
    return np.concatenate([np.asarray(pairs, dtype=np.int64).reshape(-1, 2), chosen[:, None]], axis=1), turns


def score_candidates(
    feats0: MultiScaleFeatures,
    feats1: MultiScaleFeatures,
    pairs: np.ndarray,
    options: CollationOptions,
    *,
    turned: MultiScaleFeatures | None = None,
    progress: ProgressCallback | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """S of ``pairs`` ``(P,)`` float64, each the best over the transpositions scored, and the winners ``(P,)`` int8.

    Args:
        feats1: the second manuscript's features from ``describe_transposed`` (``mirror``: every pair is scored
            under both), or its plain ones with ``picks_transpositions``.
        pairs: ``(P, 2)``; with ``picks_transpositions`` ``(P, 3)`` from ``choose_transpositions``: each pair is
            scored as drawn, and where t > 0 against ``turned`` (``describe_transposed``: j under its chosen one).
    """
    if len(pairs) == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int8)
    settings = {
        "similarity": options.similarity,
        "seed": options.seed,
        "kernel": options.kernel,
        "partial": options.partial,
    }
    if not picks_transpositions(options.transpositions):
        scores, winners = score_pairs(
            feats0, feats1, pairs, n_transpositions=options.n_transpositions, **settings, progress=progress
        )
        return scores.numpy(), winners.numpy()
    pairs = np.asarray(pairs, dtype=np.int64)
    if pairs.ndim != 2 or pairs.shape[1] != 3 or turned is None:
        raise InputError(
            "with transpositions chosen per pair, pairs are (P, 3) and the turned features given", field="pairs"
        )
    scores = score_pairs(feats0, feats1, pairs[:, :2], **settings, progress=progress)[0].numpy()
    winners = np.zeros(len(pairs), dtype=np.int8)
    asked = np.flatnonzero(pairs[:, 2] > 0)
    if len(asked):
        turned_scores = score_pairs(feats0, turned, pairs[asked, :2], **settings)[0].numpy()
        better = turned_scores > scores[asked]  # a tie goes to as drawn
        scores[asked[better]] = turned_scores[better]
        winners[asked[better]] = pairs[asked[better], 2]
    return scores, winners


def assemble(
    shape: tuple[int, int], pairs: np.ndarray, scores: np.ndarray, winners: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """S ``(n0, n1)`` float64 with ``UNSCORED`` (-inf) outside ``pairs``, and T ``(n0, n1)`` int8 (0 there)."""
    turned = np.zeros(shape, dtype=np.int8)
    if len(pairs):
        turned[pairs[:, 0], pairs[:, 1]] = winners
    return scattered(shape, pairs, scores), turned


def correspond(
    scores: dict[tuple[int, int], np.ndarray], options: CollationOptions
) -> dict[tuple[int, int], PairResult]:
    """N_S, cycles and P_S of every manuscript pair (``collation.engine.correspondences.collate``)."""
    return collate(
        scores, normalization=options.normalization, propagation=options.propagation, orientation=options.orientation
    )


def score_manuscripts(
    feats0: MultiScaleFeatures,
    feats1: MultiScaleFeatures,
    images1: Sequence[Image.Image],
    backbone: Backbone,
    options: CollationOptions,
    *,
    dtype: torch.dtype = FEATURES_DTYPE,
    stage: Callable[[str], ProgressCallback | None] = lambda name: None,
    label: str = "",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One pair of manuscripts' stages in one process: candidates, and with ``picks_transpositions`` the
    suspects, their chosen transpositions and those features, then S_trans.

    Args:
        feats1: the second manuscript's features from ``describe_transposed`` (its plain ones with
            ``picks_transpositions``); images1: its images (described transposed where a pair chooses).
        stage: the progress callback of a named stage, or None.

    Returns:
        pairs ``(P, 2)`` int64, their S ``(P,)`` float64 and winners ``(P,)`` int8.
    """
    turned1 = None
    found = find_candidates(feats0, feats1, options, progress=stage(f"candidates {label}"))
    pairs = found.pairs
    if picks_transpositions(options.transpositions):  # only what the pair does not match well as drawn
        suspected = suspects(found)
        pairs, turns = choose_transpositions(feats0, images1, backbone, pairs, suspected, options, dtype=dtype)
        turned1 = describe_transposed(
            images1, backbone, options, feats1, turns=turns, dtype=dtype, progress=stage(f"transposed {label}")
        )
    s, t = score_candidates(feats0, feats1, pairs, options, turned=turned1, progress=stage(f"scores {label}"))
    return pairs[:, :2], s, t


# --------------------------------------------------------------------------------------------------
# The whole collation in one process


@dataclass
class Manuscript:
    """A named, ordered list of illustrations: its position in the list is the illustration's index."""

    name: str
    illustrations: list[Illustration]


@dataclass
class CollationResult:
    manuscripts: list[Manuscript]
    options: CollationOptions
    pairs: dict[tuple[int, int], PairResult] = field(default_factory=dict)
    transposed: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    """T of each pair with transpositions: ``(n_a, n_b)`` int8 index into ``options.transposition_names``
    of the transposition of b's illustration that gave S, 0 where the pair is unscored (docs/transpositions.md)."""
    blank: list[np.ndarray] = field(default_factory=list)
    """``(n_m,)`` bool per manuscript: the illustrations with nothing drawn (``collation.engine.weak.is_blank``),
    whose matches are weak; empty: none known."""


def run_collation(
    manuscripts: Sequence[Manuscript],
    options: CollationOptions | None = None,
    *,
    device: str = "auto",
    weights_dir: str | Path | None = None,
    dtype: torch.dtype = FEATURES_DTYPE,
    progress: Stage | None = None,
    precision: str = "auto",
) -> CollationResult:
    """Collates two or more manuscripts: every pair of manuscripts gets S, N_S and P_S, stage after stage.

    Everything is checked (the manuscripts, ``options.check_manuscripts``, the device) before the backbone
    is loaded.

    Args:
        options: every option of the collation (default: ``CollationOptions()``).
        weights_dir: folder of the ResNet-50 weights, the caller's setting (``Settings.weights_dir``).
        dtype: storage type of the features.
        precision: the backbone's arithmetic (``collation.engine.backbones.compute_dtype``), the caller's setting.
    """
    options = options or CollationOptions()
    if len(manuscripts) < 2:
        raise InputError("a collation needs two or more manuscripts", field="manuscripts")
    names = [m.name for m in manuscripts]
    if len(set(names)) != len(names):
        raise InputError(f"manuscript names must be unique: {names}", field="manuscripts")
    options.check_manuscripts(len(manuscripts))
    target = resolve_device(device)
    # Resolved once, by the rule the service records at prepare (``resolve_precision``): what a features
    # key of these images says (``features_key``) is what this backbone computes.
    model = load_backbone(
        options.backbone, device=target, weights_dir=weights_dir, precision=resolve_precision(precision, target)
    )

    def stage(name: str) -> ProgressCallback | None:
        return (lambda done, total: progress(name, done, total)) if progress else None

    images = [[ill.image for ill in m.illustrations] for m in manuscripts]
    plain = [
        describe(im, model, options, dtype=dtype, progress=stage(f"features {m.name}"))
        for im, m in zip(images, manuscripts, strict=True)
    ]
    picks = picks_transpositions(options.transpositions)
    second = {  # the features of every manuscript that is the second of a pair, once each
        b: describe_transposed(
            images[b], model, options, plain[b], dtype=dtype, progress=stage(f"transposed features {names[b]}")
        )
        for b in range(1, len(manuscripts))
        if not picks
    }
    scores, transposed = {}, {}
    for a in range(len(manuscripts)):
        for b in range(a + 1, len(manuscripts)):
            label = f"{names[a]}-{names[b]}"
            pairs, s, t = score_manuscripts(
                plain[a], second.get(b, plain[b]), images[b], model, options, dtype=dtype, stage=stage, label=label
            )
            scores[(a, b)], turned = assemble((len(plain[a]), len(plain[b])), pairs, s, t)
            if options.n_transpositions > 1:
                transposed[(a, b)] = turned
    del model
    blank = [np.array([is_blank(image) for image in ims], dtype=bool) for ims in images]
    result = CollationResult(list(manuscripts), options, transposed=transposed, blank=blank)
    result.pairs = correspond(scores, options)
    return result
