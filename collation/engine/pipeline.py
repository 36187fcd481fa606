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

from collation import __version__
from collation.core import defaults
from collation.core.atomic import write_bytes, write_json, write_npy
from collation.core.correspondence import Correspondence, Side
from collation.core.errors import InputError
from collation.core.options import CollationOptions
from collation.engine.backbones import Backbone, load_backbone, resolve_device
from collation.engine.candidates import UNSCORED
from collation.engine.cascade import cascade_pairs
from collation.engine.concordance import PairEvidence, build_groups, concordance_csv
from collation.engine.correspondences import PairResult, collate
from collation.engine.features import MultiScaleFeatures, Progress, extract_features, extract_square_features
from collation.engine.features import features_key as images_features_key
from collation.engine.illustrations import Illustration
from collation.engine.similarity import all_pairs, score_pairs, transposition_count
from collation.engine.transpositions import extract_transposed_features, winner_names

Stage = Callable[[str, int, int], None]
"""Progress of a named stage: ``stage(name, done, total)``."""

FEATURES_DTYPE = torch.float16
"""Storage type of the descriptors: half the memory of float32 (scores are computed in float32)."""


# --------------------------------------------------------------------------------------------------
# The stages


def describe(
    images: Sequence[Image.Image],
    backbone: Backbone,
    options: CollationOptions,
    *,
    dtype: torch.dtype = FEATURES_DTYPE,
    progress: Progress | None = None,
) -> MultiScaleFeatures:
    """The features of a manuscript's illustrations: multi-scale maps (B.3), or square maps for s_features."""
    extract = extract_square_features if options.similarity == "s_features" else extract_features
    return extract(images, backbone, dtype=dtype, progress=progress)


def features_key(digests: Sequence[str], options: CollationOptions, *, dtype: torch.dtype = FEATURES_DTYPE) -> str:
    """Key of the features ``describe`` gives for images of these content digests (a cache key)."""
    if options.similarity == "s_features":
        cells = defaults.FEATURES_SIZE // defaults.PIXELS_PER_CELL
        return images_features_key(
            digests, f"{options.backbone}|square", scales=(cells,), query_scale=cells, dtype=dtype
        )
    return images_features_key(digests, options.backbone, dtype=dtype)


def describe_transposed(
    images: Sequence[Image.Image],
    backbone: Backbone,
    options: CollationOptions,
    plain: MultiScaleFeatures,
    *,
    dtype: torch.dtype = FEATURES_DTYPE,
    progress: Progress | None = None,
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
    progress: Progress | None = None,
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
    progress: Progress | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """S of ``pairs`` ``(P,)`` float64, each the best over the transpositions, and the winners ``(P,)`` int8."""
    if len(pairs) == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int8)
    scores, winners = score_pairs(
        feats0,
        feats1,
        pairs,
        similarity=options.similarity,
        seed=options.seed,
        kernel=options.kernel,
        partial=options.partial,
        n_transpositions=options.n_transpositions,
        progress=progress,
    )
    return scores.numpy(), winners.numpy()


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


def run_collation(
    manuscripts: Sequence[Manuscript],
    options: CollationOptions | None = None,
    *,
    device: str = "auto",
    weights_dir: str | Path | None = None,
    dtype: torch.dtype = FEATURES_DTYPE,
    progress: Stage | None = None,
) -> CollationResult:
    """Collates two or more manuscripts: every pair of manuscripts gets S, N_S and P_S, stage after stage.

    Everything is checked (the manuscripts, ``options.check_manuscripts``, the device) before the backbone
    is loaded.

    Args:
        options: every option of the collation (default: ``CollationOptions()``).
        weights_dir: folder of the ResNet-50 weights, the caller's setting (``Settings.weights_dir``).
        dtype: storage type of the features.
    """
    options = options or CollationOptions()
    if len(manuscripts) < 2:
        raise InputError("a collation needs two or more manuscripts", field="manuscripts")
    names = [m.name for m in manuscripts]
    if len(set(names)) != len(names):
        raise InputError(f"manuscript names must be unique: {names}", field="manuscripts")
    options.check_manuscripts(len(manuscripts))
    model = load_backbone(options.backbone, device=resolve_device(device), weights_dir=weights_dir)

    def stage(name: str) -> Progress | None:
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
    result = CollationResult(list(manuscripts), options, transposed=transposed)
    result.pairs = correspond(scores, options)
    return result


def pair_name(result: CollationResult, a: int, b: int) -> str:
    return f"{result.manuscripts[a].name}-{result.manuscripts[b].name}"


def best_matches(result: CollationResult, a: int, b: int) -> list[Correspondence]:
    """For each illustration of manuscript a, its best match in b by P_S, with all three scores, the
    cycles it closes and, with transpositions, the transposition of the match that gave S
    (docs/transpositions.md). An illustration's index is its position, so ``region`` is the position."""
    pr, turned = result.pairs[(a, b)], result.transposed.get((a, b))
    two, three = ({tuple(p) for p in cycles.tolist()} for cycles in (pr.two_cycles, pr.three_cycles))
    names = None if turned is None else winner_names(turned, result.options.transpositions)
    matches = []
    for i, j in enumerate(pr.P_S.argmax(axis=1).tolist() if pr.P_S.size else []):
        cycles = frozenset(n for n, found in ((2, two), (3, three)) if (i, j) in found)
        matches.append(
            Correspondence(
                source=Side(a, i, i),
                target=Side(b, j, j),
                S=float(pr.S[i, j]),
                N_S=float(pr.N_S[i, j]),
                P_S=float(pr.P_S[i, j]),
                rank=1,
                cycle_consistent=bool(cycles),
                cycles=cycles,
                transposition=None if names is None else str(names[i, j]),
            )
        )
    return matches


def match_row(result: CollationResult, c: Correspondence) -> dict:
    """A correspondence as ``correspondences.json`` writes it: ``index`` is the illustration's position."""

    def end(side: Side) -> dict:
        return {"index": side.position, "id": result.manuscripts[side.manuscript].illustrations[side.position].id}

    row = {"source": end(c.source), "match": end(c.target), "S": c.S, "N_S": c.N_S, "P_S": c.P_S}
    row.update(two_cycle=2 in c.cycles, three_cycle=3 in c.cycles)
    if c.transposition is not None:
        row["transposition"] = c.transposition
    return row


def correspondences(result: CollationResult, a: int, b: int) -> list[dict]:
    """For each illustration of manuscript a, its best match in b by P_S, as ``correspondences.json`` lists it."""
    return [match_row(result, c) for c in best_matches(result, a, b)]


def concordance_rows(result: CollationResult) -> list[dict]:
    """The concordance of all manuscripts (``collation.engine.concordance``, P_S and the 2- and 3-cycles), one row
    per group in the order of the first manuscript, cells as in the service's ``concordance.csv``:
    label = the illustration's id, canvas = its folio or file, image = its file when it has one."""
    sizes = {m: len(ms.illustrations) for m, ms in enumerate(result.manuscripts)}
    evidence = {
        pair: PairEvidence(pr.P_S, np.concatenate([pr.two_cycles, pr.three_cycles]), {})
        for pair, pr in result.pairs.items()
    }
    rows = []
    for group in build_groups(sizes, evidence):
        cells: list[dict | None] = []
        for m, manuscript in enumerate(result.manuscripts):
            member = group.member(m)
            if member is None:
                cells.append(None)
                continue
            ill = manuscript.illustrations[member.position]
            source = ill.source or {}
            cells.append(
                {
                    "index": member.position,
                    "label": ill.id,
                    "canvas": source.get("folio") or source.get("file"),
                    "xywh": source.get("xywh"),
                    "image": source.get("file"),
                    "confidence": member.confidence,
                    "verdict": None,
                }
            )
        first = group.members[0]
        rows.append(
            {
                "id": f"{first.manuscript}-{first.position}",
                "size": len(group.members),
                "confidence": group.confidence,
                "cells": cells,
            }
        )
    return rows


def recorded_options(options: CollationOptions) -> dict:
    """The options as ``collation.json`` records them: as a stored record does, with the transpositions' names."""
    recorded = options.to_record()
    if options.n_transpositions > 1:
        recorded["transposition_names"] = list(options.transposition_names)
    return recorded


def write_results(result: CollationResult, out_dir: str | Path) -> Path:
    """Writes each pair's matrices as .npy under ``A-B/``, ``collation.json``, ``correspondences.json`` and
    ``concordance.csv`` (one row per group of corresponding illustrations, one column group per manuscript)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for (a, b), pr in result.pairs.items():
        folder = out / pair_name(result, a, b)
        folder.mkdir(exist_ok=True)
        for name in ("S", "N_S", "P_S"):
            write_npy(folder / f"{name}.npy", getattr(pr, name))
        if (a, b) in result.transposed:
            write_npy(folder / "T.npy", result.transposed[(a, b)])
    write_json(
        out / "collation.json",
        {
            "software": {"name": "image-collation", "version": __version__},
            "options": recorded_options(result.options),
            "torch": torch.__version__,
            "manuscripts": [
                {
                    "name": m.name,
                    "illustrations": [
                        {"index": k, "id": ill.id, "label": ill.label, **ill.source}
                        for k, ill in enumerate(m.illustrations)
                    ],
                }
                for m in result.manuscripts
            ],
            "pairs": [pair_name(result, a, b) for a, b in result.pairs],
        },
    )
    write_json(
        out / "correspondences.json",
        {
            "similarity": result.options.similarity,
            **({"transposition_names": list(result.options.transposition_names)} if result.transposed else {}),
            "pairs": [
                {
                    "pair": [result.manuscripts[a].name, result.manuscripts[b].name],
                    "two_cycles": pr.two_cycles.tolist(),
                    "three_cycles": pr.three_cycles.tolist(),
                    "matches": correspondences(result, a, b),
                }
                for (a, b), pr in result.pairs.items()
            ],
        },
    )
    text = concordance_csv(concordance_rows(result), [m.name for m in result.manuscripts])
    write_bytes(out / "concordance.csv", text.encode("utf-8"))
    return out
