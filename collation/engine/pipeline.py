"""A collation's stages, in order, as plain functions: one pipeline for the command line and the service.

The command line runs them in one process (``run_collation``); the service's jobs
(``collation.jobs.steps``) run the same functions in the same order on the same data, one step each:

    describe           images -> features, and the transposed features of a second manuscript   features step
    candidate_pairs    a pair's features -> the pairs whose S is computed (the cascade)           plan step
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

from collation.core import defaults
from collation.core.errors import InputError
from collation.core.options import CollationOptions
from collation.engine.backbones import Backbone, load_backbone, resolve_device, resolve_precision
from collation.engine.candidates import UNSCORED
from collation.engine.cascade import cascade_pairs, likely_transpositions
from collation.engine.correspondences import PairResult, collate
from collation.engine.features import MultiScaleFeatures, ProgressCallback, extract_features, extract_square_features
from collation.engine.illustrations import Illustration
from collation.engine.similarity import all_pairs, score_pairs, transposition_count
from collation.engine.transpositions import extract_transposed_features
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
    dtype: torch.dtype = FEATURES_DTYPE,
    progress: ProgressCallback | None = None,
) -> MultiScaleFeatures:
    """The features a manuscript is scored with as the second of a pair: ``plain`` itself, or with
    transpositions ``T * n`` illustrations, transposition-major (``extract_transposed_features``)."""
    if options.n_transpositions == 1:
        return plain
    return extract_transposed_features(
        images, backbone, options.transpositions, plain=plain, dtype=dtype, progress=progress
    )


def candidate_pairs(
    feats0: MultiScaleFeatures,
    feats1: MultiScaleFeatures,
    options: CollationOptions,
    *,
    progress: ProgressCallback | None = None,
) -> np.ndarray:
    """``(P, 2)`` int64 row-major pairs whose S is computed: the cascade's candidates (``options.candidates``
    per illustration and direction), or every pair.

    Args:
        feats1: the second manuscript's features from ``describe_transposed``.
    """
    _, n1 = transposition_count(feats1, options.n_transpositions)
    if not options.pruned:
        return all_pairs(len(feats0), n1).numpy()
    return cascade_pairs(
        feats0,
        feats1,
        options.candidates,
        options.n_transpositions,
        seed=options.seed,
        partial=options.partial,
        progress=progress,
    )


def score_candidates(
    feats0: MultiScaleFeatures,
    feats1: MultiScaleFeatures,
    pairs: np.ndarray,
    options: CollationOptions,
    *,
    progress: ProgressCallback | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """S of ``pairs`` ``(P,)`` float64, each the best over the transpositions, and the winners ``(P,)`` int8.

    With more transpositions than ``defaults.TRANSPOSITIONS_SCORED``, each pair is scored under as drawn and
    the likeliest others only (``cascade.likely_transpositions``): the transposition-major index
    ``t * n1 + j`` of each chosen one, so its S (and its RANSAC draws) are what scoring all would give it.
    """
    if len(pairs) == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int8)
    settings = {
        "similarity": options.similarity,
        "seed": options.seed,
        "kernel": options.kernel,
        "partial": options.partial,
        "progress": progress,
    }
    t, n1 = transposition_count(feats1, options.n_transpositions)
    if t <= defaults.TRANSPOSITIONS_SCORED:
        scores, winners = score_pairs(feats0, feats1, pairs, n_transpositions=t, **settings)
        return scores.numpy(), winners.numpy()
    pairs = np.asarray(pairs, dtype=np.int64)
    chosen = likely_transpositions(feats0, feats1, pairs, t, seed=options.seed, partial=options.partial)
    expanded = np.stack([pairs[:, :1].repeat(chosen.shape[1], axis=1), chosen * n1 + pairs[:, 1:2]], axis=2)
    scores = score_pairs(feats0, feats1, expanded.reshape(-1, 2), **settings)[0].numpy().reshape(chosen.shape)
    best = scores.argmax(axis=1)  # the first of equal maxima: the lower index, as drawn first
    return scores[np.arange(len(pairs)), best], chosen[np.arange(len(pairs)), best].astype(np.int8)


def assemble(
    shape: tuple[int, int], pairs: np.ndarray, scores: np.ndarray, winners: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """S ``(n0, n1)`` float64 with ``UNSCORED`` (-inf) outside ``pairs``, and T ``(n0, n1)`` int8 (0 there)."""
    matrix, turned = np.full(shape, UNSCORED), np.zeros(shape, dtype=np.int8)
    if len(pairs):
        matrix[pairs[:, 0], pairs[:, 1]] = scores
        turned[pairs[:, 0], pairs[:, 1]] = winners
    return matrix, turned


def correspond(
    scores: dict[tuple[int, int], np.ndarray], options: CollationOptions
) -> dict[tuple[int, int], PairResult]:
    """N_S, cycles and P_S of every manuscript pair (``collation.engine.correspondences.collate``)."""
    return collate(
        scores, normalization=options.normalization, propagation=options.propagation, orientation=options.orientation
    )


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
    second = {  # the features of every manuscript that is the second of a pair, once each
        b: describe_transposed(
            images[b], model, options, plain[b], dtype=dtype, progress=stage(f"transposed features {names[b]}")
        )
        for b in range(1, len(manuscripts))
    }
    del model
    scores, transposed = {}, {}
    for a in range(len(manuscripts)):
        for b in range(a + 1, len(manuscripts)):
            label = f"{names[a]}-{names[b]}"
            pairs = candidate_pairs(plain[a], second[b], options, progress=stage(f"candidates {label}"))
            s, t = score_candidates(plain[a], second[b], pairs, options, progress=stage(f"scores {label}"))
            scores[(a, b)], turned = assemble((len(plain[a]), len(plain[b])), pairs, s, t)
            if options.n_transpositions > 1:
                transposed[(a, b)] = turned
    blank = [np.array([is_blank(image) for image in ims], dtype=bool) for ims in images]
    result = CollationResult(list(manuscripts), options, transposed=transposed, blank=blank)
    result.pairs = correspond(scores, options)
    return result
