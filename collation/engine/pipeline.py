"""The whole collation in one process: features, scores, correspondences, files on disk.

The command line calls ``run_collation`` then ``write_results``; the service runs the same steps as
RQ jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from collation import __version__
from collation.core import defaults
from collation.core.atomic import write_bytes, write_json, write_npy
from collation.core.errors import InputError
from collation.engine.backbones import BACKBONES, load_backbone, resolve_device
from collation.engine.cascade import pruned_score_matrix, pruned_score_matrix_transposed
from collation.engine.checks import check_integer, check_option, check_positive_int
from collation.engine.concordance import PairEvidence, build_groups, concordance_csv
from collation.engine.correspondences import NORMALIZATIONS, ORIENTATIONS, PROPAGATIONS, PairResult, collate
from collation.engine.features import extract_features, extract_square_features
from collation.engine.illustrations import Illustration
from collation.engine.ransac import KERNELS
from collation.engine.similarity import SIMILARITIES, check_partial, score_features_matrix
from collation.engine.transpositions import extract_transposed_features, transposition_names, winner_names

Stage = Callable[[str, int, int], None]
"""Progress of a named stage: ``stage(name, done, total)``."""


@dataclass
class Manuscript:
    """A named, ordered list of illustrations: its position in the list is the illustration's index."""

    name: str
    illustrations: list[Illustration]


@dataclass
class CollationResult:
    manuscripts: list[Manuscript]
    options: dict
    pairs: dict[tuple[int, int], PairResult] = field(default_factory=dict)
    transposed: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    """T of each pair with transpositions: ``(n_a, n_b)`` int8 index into ``options["transposition_names"]``
    of the transposition of b's illustration that gave S, 0 where the pair is unscored (docs/transpositions.md)."""


def check_options(
    *,
    backbone: str,
    similarity: str,
    seed: int,
    kernel: str,
    normalization: str,
    propagation: str,
    orientation: str,
    candidates: int | None = None,
    transpositions: str = defaults.TRANSPOSITIONS,
    partial: bool = defaults.PARTIAL,
) -> dict:
    """Every option of a collation checked against its allowed values, before any work is done.

    Returns:
        The options as a dict, as recorded in ``collation.json``.

    Raises:
        OptionError: naming the option and its allowed values. InputError: a seed that is not an integer.
    """
    for option, value, allowed in (
        ("backbone", backbone, BACKBONES),
        ("similarity", similarity, SIMILARITIES),
        ("kernel", kernel, KERNELS),
        ("normalization", normalization, NORMALIZATIONS),
        ("propagation", propagation, PROPAGATIONS),
        ("orientation", orientation, ORIENTATIONS),
    ):
        check_option(option, value, allowed)
    check_integer("seed", seed)
    if candidates is not None:
        check_positive_int("candidates", candidates)
    options = {
        "backbone": backbone,
        "similarity": similarity,
        "seed": seed,
        "kernel": kernel,
        "normalization": normalization,
        "propagation": propagation,
        "orientation": orientation,
        "candidates": candidates,
    }
    # Transposed and partial copies (docs/transpositions.md): S_trans and S_matching only; recorded
    # only when used, so the records of plain collations stay as they were.
    names = transposition_names(transpositions)
    if check_partial(partial, similarity):
        options["partial"] = True
    if len(names) > 1:
        if similarity == "s_features":
            raise InputError("transpositions need similarity s_trans or s_matching", field="transpositions")
        options.update(transpositions=transpositions, transposition_names=list(names))
    return options


def run_collation(
    manuscripts: Sequence[Manuscript],
    *,
    backbone: str = defaults.BACKBONE,
    similarity: str = defaults.SIMILARITY,
    device: str = "auto",
    seed: int = defaults.SEED,
    kernel: str = defaults.KERNEL,
    normalization: str = defaults.NORMALIZATION,
    propagation: str = defaults.PROPAGATION,
    orientation: str = defaults.ORIENTATION,
    transpositions: str = defaults.TRANSPOSITIONS,
    partial: bool = defaults.PARTIAL,
    weights_dir: str | Path | None = None,
    float16: bool = True,
    candidates: int | None = defaults.CANDIDATES,
    progress: Stage | None = None,
) -> CollationResult:
    """Collates two or more manuscripts: every pair of manuscripts gets S, N_S and P_S.

    Every option is checked (``check_options``, ``resolve_device``) before the backbone is loaded.

    Args:
        transpositions: also score the second illustration of each pair transposed: "none", "mirror"
            or "all" (``collation.engine.transpositions``); the winners go to ``result.transposed``.
        partial: partial-copy S_trans (``collation.engine.partial``).
        weights_dir: folder of the ResNet-50 weights, the caller's setting (``Settings.weights_dir``).
        float16: store features in half precision (half the memory; scores computed in float32).
        candidates: S_trans (or S_matching) only for each illustration's ``candidates`` best pairs by
            global score, in both directions; None scores every pair (``collation.engine.candidates``,
            docs/candidates.md). Unscored pairs hold -inf in S, N_S and P_S. Ignored by s_features.
            With transpositions, a pair's global score is its best over the transpositions and every
            candidate is scored under each of them (docs/transpositions.md).
    """
    if len(manuscripts) < 2:
        raise InputError("a collation needs two or more manuscripts", field="manuscripts")
    names = [m.name for m in manuscripts]
    if len(set(names)) != len(names):
        raise InputError(f"manuscript names must be unique: {names}", field="manuscripts")
    options = check_options(
        backbone=backbone,
        similarity=similarity,
        seed=seed,
        kernel=kernel,
        normalization=normalization,
        propagation=propagation,
        orientation=orientation,
        candidates=candidates,
        transpositions=transpositions,
        partial=partial,
    )
    if propagation == "3-cycles" and len(manuscripts) < 3:
        raise InputError("3-cycle propagation needs three or more manuscripts", field="propagation")
    model = load_backbone(backbone, device=resolve_device(device), weights_dir=weights_dir)

    def stage(name: str) -> Callable[[int, int], None] | None:
        return (lambda done, total: progress(name, done, total)) if progress else None

    dtype = torch.float16 if float16 else torch.float32
    features = []
    for m in manuscripts:
        images = [ill.image for ill in m.illustrations]
        if similarity == "s_features":
            features.append(extract_square_features(images, model, dtype=dtype, progress=stage(f"features {m.name}")))
        else:
            features.append(extract_features(images, model, dtype=dtype, progress=stage(f"features {m.name}")))
    turned = {}  # transposed features of every manuscript that is the second of a pair, once each
    n_turned = len(transposition_names(transpositions))
    if n_turned > 1:
        for b, m in enumerate(manuscripts[1:], start=1):
            turned[b] = extract_transposed_features(
                [ill.image for ill in m.illustrations],
                model,
                transpositions,
                plain=features[b],
                dtype=dtype,
                progress=stage(f"transposed features {m.name}"),
            )
    del model
    scores, transposed = {}, {}
    for a in range(len(manuscripts)):
        for b in range(a + 1, len(manuscripts)):
            label = f"scores {names[a]}-{names[b]}"
            if similarity == "s_features":
                scores[(a, b)] = score_features_matrix(features[a], features[b])
            elif turned:
                scores[(a, b)], transposed[(a, b)], _ = pruned_score_matrix_transposed(
                    features[a],
                    turned[b],
                    n_turned,
                    options["candidates"],
                    similarity=similarity,
                    seed=seed,
                    kernel=kernel,
                    partial=partial,
                    progress=stage(label),
                    candidates_progress=stage(f"candidates {names[a]}-{names[b]}"),
                )
            else:
                scores[(a, b)], _ = pruned_score_matrix(
                    features[a],
                    features[b],
                    options["candidates"],
                    similarity=similarity,
                    seed=seed,
                    kernel=kernel,
                    partial=partial,
                    progress=stage(label),
                    candidates_progress=stage(f"candidates {names[a]}-{names[b]}"),
                )
    result = CollationResult(list(manuscripts), options, transposed=transposed)
    result.pairs = collate(scores, normalization=normalization, propagation=propagation, orientation=orientation)
    return result


def pair_name(result: CollationResult, a: int, b: int) -> str:
    return f"{result.manuscripts[a].name}-{result.manuscripts[b].name}"


def correspondences(result: CollationResult, a: int, b: int) -> list[dict]:
    """For each illustration of manuscript a, its best match in b by P_S, with all three scores."""
    pr = result.pairs[(a, b)]
    two = {tuple(p) for p in pr.two_cycles.tolist()}
    three = {tuple(p) for p in pr.three_cycles.tolist()}
    rows = []
    for i, j in enumerate(pr.P_S.argmax(axis=1).tolist() if pr.P_S.size else []):
        rows.append(
            {
                "source": {"index": i, "id": result.manuscripts[a].illustrations[i].id},
                "match": {"index": j, "id": result.manuscripts[b].illustrations[j].id},
                "S": float(pr.S[i, j]),
                "N_S": float(pr.N_S[i, j]),
                "P_S": float(pr.P_S[i, j]),
                "two_cycle": (i, j) in two,
                "three_cycle": (i, j) in three,
            }
        )
    if (a, b) in result.transposed:  # which transposition of the match gave S (docs/transpositions.md)
        names = winner_names(result.transposed[(a, b)], result.options["transpositions"])
        for row in rows:
            row["transposition"] = str(names[row["source"]["index"], row["match"]["index"]])
    return rows


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
            "options": result.options,
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
            "similarity": result.options["similarity"],
            **({"transposition_names": result.options["transposition_names"]} if result.transposed else {}),
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
